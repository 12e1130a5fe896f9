import fs from "node:fs";
import type { Logger } from "../log";
import type { PipeFormat } from "./liveArgs";
import type { PipelineInput } from "./livePipeline";
import { spawnSupervised, type ProcessRegistry, type SupervisedProcess } from "./supervisedProcess";
import { THUMBNAIL_SECONDS, thumbnailOutputArgs, thumbnailScale } from "./thumbnails";

// The thumbnail of a session whose run decodes nothing it could take one from: a source packaged
// as sent (no ffmpeg at all), or a run that copies rungs from several inputs (whose ffmpeg makes
// none: see liveArgs.ts). Taken when asked for, not on a timer: a short ffmpeg reads the publish
// from its newest keyframe (what every new reader is handed first), decodes that one picture and
// exits. A stream nobody asks a picture of runs no process for it.

/** A still waits this long for its picture at most (a publish between keyframes has one cached). */
const STILL_TIMEOUT_MS = 5000;

/** The arguments of one still of the publish on stdin (pure). */
export function buildLiveStillArgs(format: PipeFormat, output: string): string[] {
  return [
    // -y: the file a previous still (or run) left is replaced.
    "-hide_banner", "-nostdin", "-nostats", "-loglevel", "error", "-y",
    // The reader is handed the decoder configuration and a keyframe at once: no need to wait
    // for more of the live stream to know what it is.
    "-analyzeduration", "500000",
    "-f", format === "mp4" ? "mov" : "flv", "-i", "pipe:0",
    "-map", "0:v:0", "-frames:v", "1", "-vf", thumbnailScale,
    ...thumbnailOutputArgs(output),
  ];
}

export interface LiveStillsOptions {
  ffmpegPath: string;
  registry: ProcessRegistry;
  log: Logger;
  /** The file the stream's thumbnail is served from. */
  output: string;
  /** The publish's default track, in the form its codec needs, read from its newest keyframe. */
  input: Pick<PipelineInput, "format" | "feed">;
  /** Now, ms (the file's age is judged against it). */
  now?: () => number;
}

/**
 * A session's thumbnail, taken on demand: one still at a time, none while the file is fresh, and
 * none within THUMBNAIL_SECONDS of the last one tried (a still that fails, a source it cannot
 * decode, is not tried again by every request that follows: viewers get the file there is).
 */
export class LiveStills {
  private taking: Promise<void> | undefined;
  private triedAt = -Infinity;
  private child: SupervisedProcess | undefined;
  private stopped = false;
  private input: LiveStillsOptions["input"];

  constructor(private readonly o: LiveStillsOptions) {
    this.input = o.input;
  }

  /** The next still reads this (a new run's form of the publish): the one in flight, if any, goes on. */
  readFrom(input: LiveStillsOptions["input"]): void {
    this.input = input;
  }

  /** The session is over: a still in flight is killed (it would outlive it by up to 5 s), and no other starts. */
  stop(): void {
    this.stopped = true;
    this.child?.kill();
  }

  /** Resolves once the thumbnail is at most THUMBNAIL_SECONDS old, or a still could not be taken (logged). */
  fresh(): Promise<void> {
    if (this.taking) return this.taking;
    if (this.stopped) return Promise.resolve();
    const now = this.now();
    if (this.age(now) <= THUMBNAIL_SECONDS * 1000 || now - this.triedAt < THUMBNAIL_SECONDS * 1000) return Promise.resolve();
    this.triedAt = now;
    this.taking = this.take().finally(() => (this.taking = undefined));
    return this.taking;
  }

  private now(): number {
    return this.o.now?.() ?? Date.now();
  }

  private age(now: number): number {
    try {
      return now - fs.statSync(this.o.output).mtimeMs;
    } catch {
      return Infinity;
    }
  }

  private async take(): Promise<void> {
    try {
      await this.still();
    } catch (err) {
      this.o.log.warn({ err }, "a live thumbnail could not be taken");
    }
  }

  private async still(): Promise<void> {
    const { o, input } = this;
    const child = (this.child = spawnSupervised(o.registry, { command: o.ffmpegPath, args: buildLiveStillArgs(input.format, o.output), log: o.log, name: "ffmpeg still", inputPipe: true, tailLines: 5 }));
    // Armed before the feed: a feed that throws must not leave ffmpeg waiting on its stdin.
    const timer = setTimeout(() => child.kill(), STILL_TIMEOUT_MS);
    let stopFeed: () => void = () => undefined;
    try {
      if (child.stdin) stopFeed = input.feed(child.stdin);
    } catch (err) {
      child.kill();
      await child.ended;
      this.child = undefined;
      clearTimeout(timer);
      throw err;
    }
    const end = await child.ended;
    this.child = undefined;
    clearTimeout(timer);
    stopFeed();
    if (end.code !== 0) o.log.warn({ code: end.code, signal: end.signal, stderr: end.stderrTail.slice(-2) }, "a live thumbnail could not be taken");
  }
}
