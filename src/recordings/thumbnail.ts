import fs from "node:fs";
import type { Logger } from "../log";
import { buildStillArgs, spawnSupervised, stillAt, type ProcessRegistry } from "../media";

// A finalized recording's thumbnail: one JPEG from its MP4, beside it. A recording plays
// without one, so nothing here fails the recording: a still that cannot be made is logged and
// the recording is ready all the same (its thumbnail URL answers 404).

/** One frame after a seek by the index: well under a second; anything this slow is stuck. */
const STILL_TIMEOUT_MS = 30_000;

export interface RecordingStillOptions {
  ffmpegPath: string;
  registry: ProcessRegistry;
  log: Logger;
  /** The recording's MP4. */
  mp4: string;
  /** The JPEG to write (ffmpeg writes `<output>.tmp` and renames it). */
  output: string;
  /** The recording's length: the still is taken at its middle. */
  durationSeconds: number;
  /** Aborted (the server's shutdown): ffmpeg is killed. */
  signal: AbortSignal;
}

/** Writes the recording's still; whether it did. Never throws. */
export async function makeRecordingStill(o: RecordingStillOptions): Promise<boolean> {
  let p;
  try {
    p = spawnSupervised(o.registry, {
      command: o.ffmpegPath,
      args: buildStillArgs({ input: o.mp4, output: o.output, atSeconds: stillAt(o.durationSeconds) }),
      log: o.log,
      name: "ffmpeg still",
    });
  } catch (err) {
    o.log.warn({ err }, "could not start ffmpeg for the recording's thumbnail");
    return false;
  }
  const kill = () => p.kill();
  const timer = setTimeout(kill, STILL_TIMEOUT_MS);
  o.signal.addEventListener("abort", kill);
  if (o.signal.aborted) kill();
  const end = await p.ended.finally(() => {
    clearTimeout(timer);
    o.signal.removeEventListener("abort", kill);
  });
  if (end.code === 0 && fs.existsSync(o.output)) return true;
  fs.rmSync(`${o.output}.tmp`, { force: true });
  o.log.warn({ code: end.code, signal: end.signal, stderr: end.stderrTail.slice(-3) }, "no thumbnail for the recording");
  return false;
}
