import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import type { Writable } from "node:stream";
import type { Logger } from "../log";

/** How a supervised process ended: always known, always logged. */
export interface ProcessEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines it wrote to stderr: the reason, when it failed. */
  stderrTail: string[];
  durationMs: number;
  /** We asked it to stop (stop/kill), as opposed to it exiting on its own. */
  requested: boolean;
}

export interface SupervisedProcessOptions {
  command: string;
  args: string[];
  /** Logged with every line about this process (e.g. streamId, sessionId). */
  log: Logger;
  name: string;
  onStdoutLine?(line: string): void;
  onStderrLine?(line: string): void;
  /**
   * Extra output pipes: fd 3, 4, … each handed to `onOutput` with its fd's index (0 for fd 3).
   * 'close' waits for them to drain, so `ended` comes after their last bytes.
   */
  outputPipes?: number;
  /** Its stdin is a pipe (`stdin` below): the process reads its input from onair, not a url. */
  inputPipe?: boolean;
  /** More input pipes, after the output pipes (`inputs` below): fd 3 + outputPipes, … */
  inputPipes?: number;
  /** Its working directory (an operator's `ls -l /proc/<pid>/cwd` shows whose process it is). */
  cwd?: string;
  onOutput?(index: number, chunk: Buffer): void;
  tailLines?: number;
  /**
   * What of a stderr line goes into the tail (after masking): the line, a rewritten one, or
   * undefined to keep it out (an HLS pull's `Opening '<segment url>'` lines, say). The line
   * still reaches onStderrLine whole.
   */
  tailLine?(line: string): string | undefined;
  /** The environment, when not the service's own (a variable the child must not see removed). */
  env?: NodeJS.ProcessEnv;
  /** Values masked wherever the arguments or the stderr tail are logged or reported (an SRT passphrase, a pull source's password). */
  secrets?: string[];
}

/**
 * The one way onair runs a child process (ffmpeg): spawned with piped output, its stderr
 * tail kept, its end logged with exit code and reason, registered so that shutdown can stop
 * every process that is still running. Idempotent `stop()`; `ended` resolves exactly once.
 */
export class SupervisedProcess {
  readonly ended: Promise<ProcessEnd>;
  readonly pid: number | undefined;
  /** Its stdin, with `inputPipe`: writes after it has exited are dropped (EPIPE is not an error here). */
  readonly stdin: Writable | undefined;
  /** The extra input pipes, with `inputPipes`; writes after exit are dropped like stdin's. */
  readonly inputs: Writable[];
  private readonly child: ChildProcess;
  private readonly tail: string[] = [];
  private readonly started = Date.now();
  private stopRequested = false;
  private exited = false;
  private stopping: Promise<ProcessEnd> | undefined;

  constructor(
    private readonly opts: SupervisedProcessOptions,
    private readonly registry: ProcessRegistry,
  ) {
    const max = opts.tailLines ?? 40;
    // Its own process group: a terminal's Ctrl-C reaches onair, which stops its children in
    // order, and a leftover can be killed with everything it started.
    const extra = Array.from({ length: opts.outputPipes ?? 0 }, () => "pipe" as const);
    const more = Array.from({ length: opts.inputPipes ?? 0 }, () => "pipe" as const);
    this.child = spawn(opts.command, opts.args, { stdio: [opts.inputPipe ? "pipe" : "ignore", "pipe", "pipe", ...extra, ...more], detached: true, ...(opts.cwd ? { cwd: opts.cwd } : {}), ...(opts.env ? { env: opts.env } : {}) });
    this.pid = this.child.pid;
    this.stdin = opts.inputPipe ? (this.child.stdin ?? undefined) : undefined;
    this.stdin?.on("error", () => undefined);
    this.inputs = more.map((_, i) => this.child.stdio[3 + extra.length + i] as Writable);
    for (const input of this.inputs) input.on("error", () => undefined);
    extra.forEach((_, i) => {
      const pipe = this.child.stdio[3 + i] as NodeJS.ReadableStream | null;
      pipe?.on("data", (chunk: Buffer) => opts.onOutput?.(i, chunk));
      // A reader that fails (EPIPE after a kill) must not throw into the process.
      pipe?.on("error", () => undefined);
    });
    readline.createInterface({ input: this.child.stderr! }).on("line", (line) => {
      // ffmpeg repeats its urls in its messages: a secret in one never reaches a log from here.
      const kept = opts.tailLine ? opts.tailLine(masked(line, opts.secrets)) : masked(line, opts.secrets);
      if (kept !== undefined) this.tail.push(kept);
      if (this.tail.length > max) this.tail.shift();
      opts.onStderrLine?.(line);
    });
    readline.createInterface({ input: this.child.stdout! }).on("line", (line) => opts.onStdoutLine?.(line));

    this.ended = new Promise<ProcessEnd>((resolve) => {
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.exited) return;
        this.exited = true;
        registry.remove(this);
        const end: ProcessEnd = { code, signal, stderrTail: [...this.tail], durationMs: Date.now() - this.started, requested: this.stopRequested };
        const fields = { process: opts.name, pid: this.pid, code, signal, durationMs: end.durationMs };
        if (code === 0 || end.requested) opts.log.info(fields, `${opts.name} exited`);
        else opts.log.warn({ ...fields, stderrTail: end.stderrTail.slice(-10) }, `${opts.name} failed`);
        resolve(end);
      };
      // 'close' waits for stdio to drain, so the tail holds the last words; 'error' covers a
      // binary that could not be spawned at all.
      this.child.once("close", finish);
      this.child.once("error", (err) => {
        this.tail.push(String(err));
        finish(null, null);
      });
    });
    registry.add(this);
    const shown = masked(opts.args.join(" "), opts.secrets);
    opts.log.debug({ process: opts.name, pid: this.pid, args: shown }, `${opts.name} started`);
  }

  get running(): boolean {
    return !this.exited;
  }

  /**
   * Asks the process to finish (SIGINT: ffmpeg then writes its trailers, e.g. #EXT-X-ENDLIST)
   * and kills it if it has not exited after `graceMs`.
   */
  stop(graceMs = 3000): Promise<ProcessEnd> {
    if (!this.stopping) {
      this.stopRequested = true;
      if (!this.exited) this.child.kill("SIGINT");
      const timer = setTimeout(() => this.kill(), graceMs);
      this.stopping = this.ended.finally(() => clearTimeout(timer));
    }
    return this.stopping;
  }

  kill(): void {
    this.stopRequested = true;
    if (!this.exited) this.child.kill("SIGKILL");
  }
}

/** `text` with each secret (longest first, so a secret holding another goes whole) replaced by `<secret>`. */
function masked(text: string, secrets: string[] = []): string {
  return [...secrets].filter((x) => x !== "").sort((a, b) => b.length - a.length).reduce((t, secret) => t.split(secret).join("<secret>"), text);
}

/**
 * Every process the service has running, so that nothing outlives the service. With a record
 * folder, each is also written down there while it runs (pid and start time): a run that dies
 * without stopping them (SIGKILL, a power cut) leaves the list, and the next start kills what
 * is still running of it (reapLeftovers).
 */
export class ProcessRegistry {
  private readonly running = new Set<SupervisedProcess>();

  constructor(private readonly recordDir?: string) {
    if (recordDir) fs.mkdirSync(recordDir, { recursive: true });
  }

  add(p: SupervisedProcess): void {
    this.running.add(p);
    if (!this.recordDir || p.pid === undefined) return;
    const startTime = processStartTime(p.pid);
    try {
      fs.writeFileSync(path.join(this.recordDir, String(p.pid)), JSON.stringify({ pid: p.pid, startTime }));
    } catch {
      // a full disk: the process still runs and is stopped with the service
    }
  }

  remove(p: SupervisedProcess): void {
    this.running.delete(p);
    if (!this.recordDir || p.pid === undefined) return;
    try {
      fs.rmSync(path.join(this.recordDir, String(p.pid)), { force: true });
    } catch {
      // A read-only or failing disk: the next start reaps by pid and start time, so a stale
      // record is harmless; a throw here would escape from the child's exit event.
    }
  }

  get size(): number {
    return this.running.size;
  }

  pids(): number[] {
    return [...this.running].map((p) => p.pid).filter((pid): pid is number => pid !== undefined);
  }

  async stopAll(graceMs = 3000): Promise<void> {
    await Promise.all([...this.running].map((p) => p.stop(graceMs)));
  }
}

export function spawnSupervised(registry: ProcessRegistry, opts: SupervisedProcessOptions): SupervisedProcess {
  return new SupervisedProcess(opts, registry);
}

/** A process's start time in clock ticks since boot (/proc/<pid>/stat field 22): a pid alone may have been reused. */
function processStartTime(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces: count from the closing parenthesis.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/**
 * At start: kills the process groups a previous run recorded in `recordDir` and left running
 * (it died without stopping them), when the pid is still the same process. Returns how many.
 */
export function reapLeftovers(recordDir: string, onReaped: (pid: number) => void = () => {}): number {
  let entries: string[];
  try {
    entries = fs.readdirSync(recordDir);
  } catch {
    return 0;
  }
  let reaped = 0;
  for (const entry of entries) {
    const file = path.join(recordDir, entry);
    try {
      const { pid, startTime } = JSON.parse(fs.readFileSync(file, "utf8")) as { pid: number; startTime?: string };
      if (Number.isInteger(pid) && pid > 1 && startTime !== undefined && processStartTime(pid) === startTime) {
        process.kill(-pid, "SIGKILL");
        reaped++;
        onReaped(pid);
      }
    } catch {
      // unreadable, or gone between the check and the kill: nothing to reap
    }
    fs.rmSync(file, { force: true });
  }
  return reaped;
}