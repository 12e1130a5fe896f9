import type { Logger } from "../log";
import { spawnSupervised, type ProcessEnd, type ProcessRegistry, type SupervisedProcess } from "../media";
import type { EventTarget } from "../shapes";
import { failuresAfter, retryDelayMs } from "./backoff";
import { describePushFailure, redactDestination } from "./failure";
import { buildPushArgs, progressShowsMedia, type PushInput } from "./pushArgs";

/** What a push tells its owner, which raises the multistream.* events. */
export type PushReport = { kind: "connected" } | { kind: "error"; reason: string } | { kind: "disconnected" };

export interface TargetPushOptions {
  target: EventTarget;
  /** Secret: holds the destination's stream key. Never logged, never reported. */
  url: string;
  videoOnly: boolean;
  input: PushInput;
  ffmpegPath: string;
  registry: ProcessRegistry;
  /** Already carries the stream, session and target. */
  log: Logger;
  report(r: PushReport): void;
}

type State = "running" | "ending" | "stopped";

/**
 * One target's push for one live session: a supervised ffmpeg, restarted with back-off after
 * a failure for as long as the session is live. Connected when media goes out; every
 * `connected` is followed by exactly one `disconnected`. A failure is reported as `error` once
 * per reason until the push connects again (every attempt is logged), so a destination that
 * stays down does not flood webhooks.
 */
export class TargetPush {
  private state: State = "running";
  private process: SupervisedProcess | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private connectedAt: number | undefined;
  private failures = 0;
  private attempts = 0;
  private lastReported: string | undefined;
  private readonly processLog: Logger;
  private markClosed!: () => void;
  /** Resolves once the push is over: no process, no retry pending, its events reported. */
  readonly closed = new Promise<void>((resolve) => (this.markClosed = resolve));

  constructor(private readonly o: TargetPushOptions) {
    // The supervisor logs the command line (debug) and the stderr tail of a failure: both
    // hold the url, so they are redacted on their way out (and the local source's url, whose
    // path is the stream's own key).
    const source = o.input.kind === "source" ? o.input.url : undefined;
    const redact = (s: string) => (source ? redactDestination(redactDestination(s, o.url), source) : redactDestination(s, o.url));
    this.processLog = o.log.child({}, { serializers: { args: (v: string) => redact(String(v)), stderrTail: (v: string[]) => v.map(redact) } });
  }

  get target(): EventTarget {
    return this.o.target;
  }

  get connected(): boolean {
    return this.connectedAt !== undefined;
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** A renamed target keeps pushing; later events carry the new name. */
  rename(name: string): void {
    this.o.target.name = name;
  }

  start(): void {
    this.attempt();
  }

  /**
   * The session ended: its media ends too, and ffmpeg exits by itself once it has sent what
   * its input still held (a rendition push is about a segment behind the live edge). Stopped
   * after `drainMs` if it has not. No retry from now on.
   */
  finish(drainMs: number): Promise<void> {
    if (this.state !== "running") return this.closed;
    this.state = "ending";
    this.cancelRetry();
    const p = this.process;
    if (p) {
      const timer = setTimeout(() => void p.stop(2000), drainMs);
      void p.ended.finally(() => clearTimeout(timer));
    }
    this.settle();
    return this.closed;
  }

  /** Stops at once (reference removed, target disabled or changed). */
  stop(graceMs = 2000): Promise<void> {
    if (this.state === "stopped") return this.closed;
    this.state = "stopped";
    this.cancelRetry();
    void this.process?.stop(graceMs);
    this.settle();
    return this.closed;
  }

  private attempt(): void {
    this.retryTimer = undefined;
    if (this.state !== "running") return;
    this.attempts++;
    const p = spawnSupervised(this.o.registry, {
      command: this.o.ffmpegPath,
      args: buildPushArgs({ input: this.o.input, destination: this.o.url, videoOnly: this.o.videoOnly }),
      log: this.processLog,
      name: "ffmpeg push",
      onStdoutLine: (line) => {
        if (this.process === p && this.connectedAt === undefined && progressShowsMedia(line)) this.becameConnected();
      },
      tailLines: 20,
    });
    this.process = p;
    this.o.log.info({ attempt: this.attempts, pid: p.pid }, "multistream push starting");
    void p.ended.then((end) => this.exited(p, end));
  }

  private becameConnected(): void {
    this.connectedAt = Date.now();
    this.lastReported = undefined;
    this.o.log.info({ attempt: this.attempts }, "multistream push connected: the destination takes media");
    this.o.report({ kind: "connected" });
  }

  private exited(p: SupervisedProcess, end: ProcessEnd): void {
    if (this.process === p) this.process = undefined;
    const connectedForMs = this.connectedAt === undefined ? undefined : Date.now() - this.connectedAt;
    this.connectedAt = undefined;
    const wasConnected = connectedForMs !== undefined;

    if (this.state !== "running" || end.requested) {
      // We stopped it, or the session ended and it sent what was left.
      this.o.log.info({ connectedForMs, code: end.code }, "multistream push stopped");
      if (wasConnected) this.o.report({ kind: "disconnected" });
      this.settle();
      return;
    }

    this.failures = failuresAfter(this.failures, connectedForMs);
    const retryInMs = retryDelayMs(this.failures);
    if (end.code === 0) {
      // Its input ended: the publisher left and the session is ending (sessionEnded follows
      // and cancels the retry). Not the destination's fault, so not an error.
      this.o.log.info({ connectedForMs, retryInMs }, "multistream push input ended");
      if (wasConnected) this.o.report({ kind: "disconnected" });
    } else {
      const failure = describePushFailure(end.stderrTail, this.o.url, { connected: wasConnected, code: end.code, signal: end.signal });
      const fields = { attempt: this.attempts, failuresInARow: this.failures, reason: failure.reason, connectedForMs };
      if (failure.permanent) this.o.log.error(fields, "multistream push failed: not retrying");
      else this.o.log.warn({ ...fields, retryInMs }, "multistream push failed: retrying");
      if (failure.reason !== this.lastReported) {
        this.lastReported = failure.reason;
        this.o.report({ kind: "error", reason: failure.reason });
      }
      if (wasConnected) this.o.report({ kind: "disconnected" });
      if (failure.permanent) {
        this.state = "stopped";
        this.settle();
        return;
      }
    }
    this.retryTimer = setTimeout(() => this.attempt(), retryInMs);
  }

  private cancelRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  private settle(): void {
    if (this.state !== "running" && !this.process && !this.retryTimer) this.markClosed();
  }
}
