// Small pieces the benchmarks share: settings from the environment, process CPU, statistics.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import pg from "pg";
import type { Config } from "../src/config";
import { PART_SECONDS } from "../src/hls";
import { variantDir, variantPlaylist } from "../src/media/hlsFiles";
import { buildLiveArgs, renditionFd } from "../src/media/liveArgs";
import { AUDIO_BITRATE } from "../src/media/livePipeline";
import type { Rendition } from "../src/shapes";

/** A positive integer setting (BENCH_*), or the fallback when unset; anything else stops the bench. */
export function positiveIntFromEnv(name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0 || n > max) throw new Error(`${name} must be an integer from 1 to ${max}, got "${raw}"`);
  return n;
}

/** A comma-separated list of positive integers (BENCH_*, e.g. "1,4,8"), or the fallback when unset. */
export function positiveIntListFromEnv(name: string, fallback: number[], max = Number.MAX_SAFE_INTEGER): number[] {
  return intListFromEnv(name, fallback, 1, max);
}

/** The same with 0 allowed (BENCH_RTT_MS=0,80: no delay is one of the cases). */
export function nonNegativeIntListFromEnv(name: string, fallback: number[], max = Number.MAX_SAFE_INTEGER): number[] {
  return intListFromEnv(name, fallback, 0, max);
}

function intListFromEnv(name: string, fallback: number[], min: number, max: number): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  return raw.split(",").map((part, i) => {
    const n = Number(part.trim());
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be a comma-separated list of integers from ${min} to ${max}, got "${raw}" (item ${i + 1})`);
    return n;
  });
}

const CLK_TCK = (() => {
  const n = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout);
  return Number.isInteger(n) && n > 0 ? n : 100;
})();

export interface ProcessStat {
  ppid: number;
  /** CPU seconds (user + system) of the process itself. */
  cpu: number;
  /** CPU seconds of its children that have exited and been waited for. */
  reapedChildrenCpu: number;
}

/** A process's parent and CPU seconds, from /proc/<pid>/stat (Linux); undefined once it is gone. */
export function processStat(pid: number): ProcessStat | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // After the command name (which may hold spaces): ppid is field 4, utime..cstime 14-17.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return {
      ppid: Number(f[1]),
      cpu: (Number(f[11]) + Number(f[12])) / CLK_TCK,
      reapedChildrenCpu: (Number(f[13]) + Number(f[14])) / CLK_TCK,
    };
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used, from /proc (Linux); undefined once it is gone. */
export function processCpuSeconds(pid: number): number | undefined {
  return processStat(pid)?.cpu;
}

/** CPU seconds the whole machine has been busy, all cores (/proc/stat: everything but idle and iowait). */
export function machineBusySeconds(): number {
  const f = fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal; guest time is counted in user already
  const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
  return busy / CLK_TCK;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** `ffmpeg version 5.1.…` of a binary, for a benchmark's header. */
export function ffmpegVersion(ffmpeg: string): string {
  const res = spawnSync(ffmpeg, ["-version"], { encoding: "utf8" });
  return (res.stdout ?? "").split("\n")[0]?.replace(/ Copyright.*$/, "") || "unknown";
}

/**
 * A clip like a typical OBS output (H.264 ultrafast 2.5 Mb/s, 1 s keyframes, AAC), made once
 * per run and pushed in a loop: `<dir>/clip-<size><fps>.flv` (`-<kbps>k` added for another
 * video bitrate).
 */
export function makeClip(ffmpeg: string, dir: string, clip: { size: string; fps: number; seconds: number; videoKbps?: number }): Promise<string> {
  const kbps = clip.videoKbps ?? 2500;
  const file = path.join(dir, `clip-${clip.size}p${clip.fps}${kbps === 2500 ? "" : `-${kbps}k`}.flv`);
  const args = [
    "-hide_banner", "-nostdin", "-loglevel", "error",
    "-f", "lavfi", "-i", `testsrc2=size=${clip.size}:rate=${clip.fps}`,
    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", String(clip.seconds),
    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
    "-b:v", `${kbps}k`, "-maxrate", `${kbps}k`, "-bufsize", `${2 * kbps}k`,
    "-g", String(clip.fps), "-keyint_min", String(clip.fps), "-sc_threshold", "0",
    "-c:a", "aac", "-b:a", "128k", "-ar", "48000", "-ac", "2",
    "-f", "flv", file,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpeg, args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve(file) : reject(new Error(`could not make the test clip (ffmpeg exit ${code}): ${stderr.slice(-300)}`))));
  });
}

// ---------------------------------------------------------------------------------------------
// The bare baseline: onair's live pipeline as plain ffmpeg

/**
 * The pipeline's own arguments with only the input and the outputs changed: the clip paced by
 * `-re` in place of the FLV pipe from the ingest, and each
 * rendition's fragmented MP4 pipe replaced by ffmpeg's own fMP4 HLS muxer into `outDir`, so the
 * baseline is the same encode with ffmpeg doing the packaging onair does in Node.
 */
export function bareArgs(clip: string, outDir: string, renditions: Rendition[], config: Pick<Config, "hlsSegmentSeconds" | "hlsLowLatency" | "hlsListSize">, prefix: string): string[] {
  const marker = "bench-input.flv";
  const args = buildLiveArgs({
    inputFile: marker,
    renditions,
    segmentSeconds: config.hlsSegmentSeconds,
    ...(config.hlsLowLatency ? { fragmentMicros: PART_SECONDS * 1e6 } : {}),
    audioBitrate: AUDIO_BITRATE,
  });
  const at = args.indexOf(marker);
  if (at < 1 || args[at - 1] !== "-i") throw new Error("buildLiveArgs no longer has a single `-i <input>`: update bareArgs in bench/lib.ts");
  let from = at - 1;
  if (args[from - 2] === "-f") from -= 2;
  const out = [...args.slice(0, from), "-re", "-stream_loop", "-1", "-i", clip];
  let i = at + 1;
  for (const r of renditions) {
    const muxer = args.indexOf("-f", i);
    const pipe = args.indexOf(`pipe:${renditionFd(r)}`, i);
    if (muxer < 0 || pipe < muxer || args[muxer + 1] !== "mp4") throw new Error("buildLiveArgs no longer ends each rendition with `-f mp4 … pipe:N`: update bareArgs in bench/lib.ts");
    const dir = variantDir(outDir, r);
    out.push(
      ...args.slice(i, muxer),
      "-f", "hls", "-hls_time", String(config.hlsSegmentSeconds), "-hls_list_size", String(config.hlsListSize),
      "-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", `${prefix}_init.mp4`,
      "-hls_flags", "delete_segments+independent_segments+temp_file",
      "-hls_segment_filename", path.join(dir, `${prefix}_%05d.m4s`), variantPlaylist(outDir, r),
    );
    i = pipe + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Processes a bench starts: every one is tracked by PID until it has exited, so that a failure
// or a Ctrl-C leaves nothing running (`running`; kill what is left on the way out).

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export const running = new Set<Child>();

export class Child {
  readonly exited: Promise<Exit>;
  readonly startedAt = performance.now();
  private readonly proc: ChildProcess;
  private readonly tail: string[] = [];
  private exit: Exit | undefined;

  constructor(
    readonly name: string,
    command: string,
    args: string[],
    opts: { cwd?: string; env?: NodeJS.ProcessEnv; onStdout?(line: string): void; onStdoutData?(chunk: Buffer): void; onStderr?(line: string): void } = {},
  ) {
    const piped = opts.onStdout !== undefined || opts.onStdoutData !== undefined;
    this.proc = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", piped ? "pipe" : "ignore", "pipe"] });
    running.add(this);
    if (opts.onStdout) readline.createInterface({ input: this.proc.stdout! }).on("line", (line) => opts.onStdout!(line));
    // Binary output (an FLV on pipe:1), chunk by chunk as it comes.
    if (opts.onStdoutData) this.proc.stdout!.on("data", (chunk: Buffer) => opts.onStdoutData!(chunk));
    readline.createInterface({ input: this.proc.stderr! }).on("line", (line) => {
      this.tail.push(line);
      if (this.tail.length > 12) this.tail.shift();
      opts.onStderr?.(line);
    });
    this.exited = new Promise<Exit>((resolve) => {
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.exit) return;
        this.exit = { code, signal };
        running.delete(this);
        resolve(this.exit);
      };
      this.proc.once("close", finish);
      this.proc.once("error", (err) => {
        this.tail.push(String(err));
        finish(null, null);
      });
    });
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  get isRunning(): boolean {
    return this.exit === undefined;
  }

  /** Its name, pid and last words: for error messages while it runs. */
  describe(): string {
    return `${this.name} (pid ${this.pid})${this.tail.length ? `: ${this.tail.slice(-4).join(" | ")}` : ""}`;
  }

  /** Why it ended, with its last words: for error messages. */
  describeExit(): string {
    const how = this.exit ? (this.exit.signal ? `signal ${this.exit.signal}` : `code ${this.exit.code}`) : "still running";
    return `${this.name} (pid ${this.pid}) exited with ${how}${this.tail.length ? `: ${this.tail.slice(-4).join(" | ").slice(0, 600)}` : ""}`;
  }

  /** `sig` (ffmpeg finishes its files on SIGINT; the server shuts down on SIGTERM), SIGKILL after graceMs. */
  async stop(graceMs = 3000, sig: NodeJS.Signals = "SIGINT"): Promise<Exit> {
    this.signal(sig);
    const timer = setTimeout(() => this.signal("SIGKILL"), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  signal(sig: NodeJS.Signals): void {
    if (!this.isRunning || this.pid === undefined) return;
    try {
      process.kill(this.pid, sig);
    } catch {
      // already gone
    }
  }
}

/** Ctrl-C or SIGTERM: `cleanUp` (kill what the bench started), then exit 130. */
export function exitOnSignal(cleanUp: () => void): void {
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.once(sig, () => {
      process.stderr.write(`\n${sig}: stopping every process this bench started\n`);
      cleanUp();
      process.exit(130);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Tables

/** A number with `digits` decimals, or "-" when there is none. */
export function fixed(n: number | undefined, digits: number): string {
  return n !== undefined && Number.isFinite(n) ? n.toFixed(digits) : "-";
}

/** Plain text with aligned columns: the first column left-aligned, numbers right-aligned. */
export function formatTable(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, col) => Math.max(...all.map((row) => (row[col] ?? "").length)));
  const line = (row: string[]) =>
    row.map((cell, col) => (col === 0 ? cell.padEnd(widths[col] ?? 0) : cell.padStart(widths[col] ?? 0))).join("  ");
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(header), rule, ...rows.map(line)].join("\n");
}

/** What autocannon counts of a run's failures (its Result, or the part of it read here). */
export interface RunOutcome {
  errors: number;
  non2xx: number;
  timeouts: number;
  statusCodeStats?: Record<string, { count?: number }>;
}

/** Why a run cannot be trusted, if it cannot: failed requests measure the error path, not the endpoint. */
export function runProblems(label: string, r: RunOutcome): string | undefined {
  if (r.errors === 0 && r.non2xx === 0 && r.timeouts === 0) return undefined;
  const codes = Object.entries(r.statusCodeStats ?? {})
    .filter(([code]) => !code.startsWith("2"))
    .map(([code, stat]) => `${stat.count ?? 0} × ${code}`)
    .join(", ");
  return `${label}: ${r.non2xx} non-2xx responses${codes ? ` (${codes})` : ""}, ${r.errors} connection errors, ${r.timeouts} timeouts`;
}

/** A database of its own (`<name>_<pid>`) on the PostgreSQL server at `server`, dropped after the run. */
export async function throwAwayDatabase(server: string, name: string): Promise<{ url: string; drop(): Promise<void> }> {
  const database = `${name}_${process.pid}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: server });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  await admin(`CREATE DATABASE "${database}"`);
  const u = new URL(server);
  u.pathname = `/${database}`;
  return { url: u.toString(), drop: () => admin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`) };
}

/** A process's children, by PID (the server's own ffmpeg: ladders, bridges, SRT listeners). */
export function childPids(pid: number | undefined): number[] {
  if (pid === undefined) return [];
  return spawnSync("pgrep", ["-P", String(pid)], { encoding: "utf8" }).stdout.split("\n").filter(Boolean).map(Number);
}

/** A process's ffmpeg children (the server's ladders, remuxes, bridges) and the CPU seconds of each. */
export function ffmpegChildren(pid: number | undefined): Map<number, number> {
  const children = new Map<number, number>();
  for (const child of childPids(pid)) {
    let cmd = "";
    try {
      cmd = fs.readFileSync(`/proc/${child}/cmdline`, "utf8");
    } catch {
      continue;
    }
    const cpu = processCpuSeconds(child);
    if (cmd.includes("ffmpeg") && cpu !== undefined) children.set(child, cpu);
  }
  return children;
}

/** A call to a server's API with its first user's key; the answer's JSON (undefined for 204), or an error with its body. */
export async function serverApi(s: { apiUrl: string; key: string | undefined }, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(s.apiUrl + p, {
    method,
    headers: { authorization: `Bearer ${s.key}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? undefined : res.json();
}

/** SIGKILL to each PID; one already gone is fine. */
export function killPids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** SIGTERM (the server stops its own ffmpeg), up to 12 s to exit, then whatever it left, by PID. */
export async function stopServerProcess(server: { pid: number; child: ChildProcess; exited: Promise<unknown>; kill(): Promise<unknown> } | undefined): Promise<void> {
  if (!server) return;
  const kids = childPids(server.pid);
  server.child.kill("SIGTERM");
  await Promise.race([server.exited, new Promise((r) => setTimeout(r, 12_000).unref())]);
  await server.kill();
  killPids(kids);
}
