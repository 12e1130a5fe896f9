import fs from "node:fs";
import type { Logger } from "../log";
import { spawnSupervised, type ProcessRegistry } from "../media";
import { buildMp4RemuxArgs } from "./vod";

// The MP4 remux of a recording, watched for progress rather than timed: a copy remux runs at
// disk speed (2 GiB in about 7 s here), so its length says nothing about whether it is stuck;
// only a remux that stops moving is.

/** How long a remux may make no progress before it is stopped (FINALIZE_STALL_SECONDS). */
export const DEFAULT_REMUX_STALL_MS = 30_000;

/**
 * Whether a remux is moving (pure). It is fed readings by name: ffmpeg's `-progress` output
 * clock and bytes, and the size and modification time of the file it writes. The file's are
 * needed because the `+faststart` pass at the end rewrites the whole file in place and prints
 * no progress line meanwhile. Any reading that changed is progress.
 */
export class ProgressWatchdog {
  private readonly last = new Map<string, number>();
  private lastProgressAt: number;

  constructor(
    readonly stallMs: number,
    now: number,
  ) {
    this.lastProgressAt = now;
  }

  observe(reading: string, value: number, now: number): void {
    if (!Number.isFinite(value) || this.last.get(reading) === value) return;
    this.last.set(reading, value);
    this.lastProgressAt = Math.max(this.lastProgressAt, now);
  }

  /** How long nothing has moved, when that is over the limit; undefined while it moves. */
  stalledFor(now: number): number | undefined {
    const quiet = now - this.lastProgressAt;
    return quiet >= this.stallMs ? quiet : undefined;
  }
}

/** A `-progress` line's reading, when it is one the watchdog reads (pure). */
export function progressReading(line: string): { reading: string; value: number } | undefined {
  const m = /^(out_time_us|total_size)=(\d+)\s*$/.exec(line);
  return m ? { reading: m[1]!, value: Number(m[2]) } : undefined;
}

/** The server stopped the remux (shutdown): nothing is wrong with the recording. */
export class RemuxInterrupted extends Error {
  constructor() {
    super("the MP4 remux was interrupted by the server's shutdown");
    this.name = "RemuxInterrupted";
  }
}

/** ffmpeg failed or stalled; `stderrTail` says why (a full disk among others). */
export class RemuxFailed extends Error {
  constructor(
    message: string,
    readonly stderrTail: string[],
  ) {
    super(message);
    this.name = "RemuxFailed";
  }
}

export interface RemuxOptions {
  ffmpegPath: string;
  registry: ProcessRegistry;
  log: Logger;
  /** The rendition's VOD playlist. */
  playlist: string;
  /** Written aside as `<output>.tmp`, renamed when complete. */
  output: string;
  stallMs: number;
  /** Aborted: ffmpeg is killed and RemuxInterrupted thrown. */
  signal: AbortSignal;
}

/**
 * Remuxes the playlist into an MP4. However long it runs, it is killed only when it makes no
 * progress for `stallMs`, or when `signal` aborts. Throws RemuxFailed or RemuxInterrupted; the
 * temporary file never outlives a failure.
 */
export async function remuxToMp4(o: RemuxOptions): Promise<void> {
  const tmp = `${o.output}.tmp`;
  const watchdog = new ProgressWatchdog(o.stallMs, Date.now());
  const p = spawnSupervised(o.registry, {
    command: o.ffmpegPath,
    args: buildMp4RemuxArgs(o.playlist, tmp),
    log: o.log,
    name: "ffmpeg remux",
    onStdoutLine: (line) => {
      const r = progressReading(line);
      if (r) watchdog.observe(r.reading, r.value, Date.now());
    },
  });
  let stalledMs: number | undefined;
  const look = () => {
    const now = Date.now();
    try {
      const st = fs.statSync(tmp);
      watchdog.observe("file size", st.size, now);
      watchdog.observe("file mtime", st.mtimeMs, now);
    } catch {
      // not created yet: ffmpeg is still opening its input
    }
    stalledMs = watchdog.stalledFor(now);
    if (stalledMs !== undefined) p.kill();
  };
  const timer = setInterval(look, Math.min(1000, Math.max(50, Math.floor(o.stallMs / 10))));
  const abort = () => p.kill();
  o.signal.addEventListener("abort", abort);
  if (o.signal.aborted) p.kill();
  const end = await p.ended.finally(() => {
    clearInterval(timer);
    o.signal.removeEventListener("abort", abort);
  });
  // Finished just as it was to be stopped: finished all the same.
  if (end.code === 0) {
    fs.renameSync(tmp, o.output);
    return;
  }
  fs.rmSync(tmp, { force: true });
  if (o.signal.aborted) throw new RemuxInterrupted();
  if (stalledMs !== undefined) {
    throw new RemuxFailed(`MP4 remux made no progress for ${Math.round(stalledMs / 1000)} s and was stopped`, end.stderrTail);
  }
  throw new RemuxFailed(
    `MP4 remux failed (ffmpeg exit ${end.code ?? end.signal}): ${end.stderrTail.slice(-3).join(" | ") || "no output"}`,
    end.stderrTail,
  );
}
