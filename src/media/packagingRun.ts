import { Writable } from "node:stream";
import type { LivePackager, PackagerRun } from "../hls";
import type { Logger } from "../log";
import type { PipeFormat } from "./liveArgs";
import type { PipelineInput } from "./livePipeline";
import type { ProcessEnd } from "./supervisedProcess";

// A run with no ffmpeg at all: a passthrough source whose codec players decode as it is (HEVC,
// AV1), so nothing would be encoded, and a remux in a process of its own would only add a copy
// and a pipe. The ingest writes the publish as LL-HLS parts (fragmented MP4, a keyframe opening
// each segment's first part; ingest/mp4Pipe.ts) into an in-process stream, and each write goes
// into the packager as it is. The session sees a run like any other: it starts, becomes
// playable, ends (the publish ended, its decoder configuration changed) or is stopped.
// An encoder's own ladder (multitrack) comes the same way, one stream of parts per video track,
// each into its rendition: the server encodes nothing for it.

/** What a reader of the publish gets: FLV or per-frame MP4 for an ffmpeg, or LL-HLS parts for the packager. */
export type SourceForm = PipeFormat | "parts";

export interface PackagingRunOptions {
  log: Logger;
  /** The publish as parts, one input per rendition (its video track, with the audio). */
  inputs: Omit<PipelineInput, "format">[];
  packager: LivePackager;
  /**
   * A reader of the publish as FLV beside the packager (WebRTC playback's frames): fed as long
   * as the run goes, stopped with it; its failures are its own, never the run's.
   */
  frames?: { feed(into: Writable): () => void; write(chunk: Buffer): void; stop(): void };
  /** Every rendition has a complete segment from this run: once per run. */
  onPlayable(): void;
  /** A part the packager refused (a malformed stream), or a callback that threw. */
  onFault(err: unknown): void;
  /** The run is over and its last parts are in the packager. Called once. */
  onEnded(end: ProcessEnd): void;
}

export class PackagingRun {
  private run: PackagerRun | undefined;
  private readonly stopFeeds: (() => void)[] = [];
  private playable = false;
  private faulted = false;
  private stopping = false;
  private startedAt = 0;
  private markDone!: () => void;
  /** Resolves once the run has ended and its last parts are in the packager. */
  readonly done = new Promise<void>((resolve) => (this.markDone = resolve));
  private ended = false;

  constructor(private readonly o: PackagingRunOptions) {}

  start(): void {
    const run = this.o.packager.startRun();
    this.run = run;
    this.startedAt = Date.now();
    this.o.log.info({ input: this.o.inputs[0]?.name, renditions: this.o.inputs.length }, "packaging the source as sent: no transcode");
    this.o.inputs.forEach((input, index) => {
      const sink = new Writable({
        // The packager takes each write at once: this stream never holds anything back, so the
        // ingest never sees this reader lag.
        write: (chunk: Buffer, _encoding, callback) => {
          this.take(run, index, chunk);
          callback();
        },
      });
      // Ended by the ingest (the publish is over, a configuration changed) or destroyed (cut
      // off): the run is over either way, for every rendition (the next run starts them together).
      sink.on("finish", () => this.finish(0));
      sink.on("close", () => this.finish(sink.writableFinished ? 0 : 1));
      sink.on("error", () => undefined);
      this.stopFeeds.push(input.feed(sink));
    });
    const frames = this.o.frames;
    if (frames) {
      const sink = new Writable({
        write: (chunk: Buffer, _encoding, callback) => {
          try {
            frames.write(chunk);
          } catch (err) {
            this.o.log.warn({ err }, "a reader beside the packager failed; the run goes on");
          }
          callback();
        },
      });
      sink.on("error", () => undefined);
      this.stopFeeds.push(frames.feed(sink), () => frames.stop());
    }
  }

  private take(run: PackagerRun, index: number, chunk: Buffer): void {
    if (this.faulted || this.ended) return;
    try {
      run.push(index, chunk);
    } catch (err) {
      // Parts the packager cannot read would only get worse: this run stops, the session decides.
      this.faulted = true;
      this.o.onFault(err);
      this.finish(1);
      return;
    }
    if (!this.playable && run.playable) {
      this.playable = true;
      this.guard(() => this.o.onPlayable());
    }
  }

  /** Stops reading the publish; its last parts are in the packager when this resolves. */
  async stop(): Promise<void> {
    if (!this.run) return;
    this.stopping = true;
    // Stopping a feed writes what its muxer still holds (the part in the making) into the run first.
    for (const stop of this.stopFeeds) this.guard(stop);
    this.finish(0);
    await this.done;
  }

  private finish(code: number): void {
    if (this.ended) return;
    this.ended = true;
    for (const stop of this.stopFeeds) this.guard(stop);
    this.guard(() => this.run?.end());
    this.markDone();
    const end: ProcessEnd = { code, signal: null, stderrTail: this.faulted ? ["the packager refused a part"] : [], durationMs: Date.now() - this.startedAt, requested: this.stopping };
    this.o.log.info({ code, durationMs: end.durationMs, requested: end.requested }, "packaging the source ended");
    this.guard(() => this.o.onEnded(end));
  }

  /** Runs a callback of the session's; a throw is reported, never thrown into the ingest. */
  private guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.o.onFault(err);
    }
  }
}
