import type { Writable } from "node:stream";
import type { LivePackager, PackagerRun } from "../hls";
import type { Logger } from "../log";
import type { Rendition } from "../shapes";
import { buildLiveArgs, trackInputs, type PipeFormat } from "./liveArgs";
import { spawnSupervised, type ProcessEnd, type ProcessRegistry, type SupervisedProcess } from "./supervisedProcess";

export const AUDIO_BITRATE = 128_000;

export interface LivePipelineOptions {
  ffmpegPath: string;
  log: Logger;
  registry: ProcessRegistry;
  /** The published stream, written into the pipeline's ffmpeg. */
  input: PipelineInput;
  renditions: Rendition[];
  segmentSeconds: number;
  /** LL-HLS parts of this many µs; undefined: segments only. */
  fragmentMicros?: number;
  /** The ffmpeg has `-movflags cmaf`. */
  cmaf?: boolean;
  /** The session's media folder: ffmpeg's working directory. */
  workDir?: string;
  /** Where ffmpeg keeps the newest picture as a JPEG (written aside, renamed over); undefined: none. */
  thumbnailFile?: string;
  /** The session's packager: this run's fragments continue its playlists. */
  packager: LivePackager;
  /** WebRTC playback's tap on this run: each encoded rendition's FLV video, the Opus audio's port. */
  realtime?: RealtimeTap;
  /** Every rendition has a complete segment from this run: once per run. */
  onPlayable(): void;
  /** ffmpeg's output clock advanced: media seconds written so far by this pipeline. */
  onOutputTime?(seconds: number): void;
  /**
   * Something in the pipeline's own callbacks threw (a malformed fragment, a storage write):
   * the session decides; nothing here ever throws into a stream handler or a timer.
   */
  onFault(err: unknown): void;
  /** ffmpeg is gone and its last fragments are in the packager. Called once. */
  onEnded(end: ProcessEnd): void;
}

/**
 * The published stream as a run reads it: FLV tags written into ffmpeg's stdin as they arrive
 * from the publisher, with no network hop between the ingest and ffmpeg (and no local port for
 * another user of the machine to play from).
 */
export interface PipelineInput {
  /** The stream's internal name (its id, never its key): in logs and for tests. */
  name: string;
  /** The form it is written in (the source's codec decides). */
  format: PipeFormat;
  /**
   * Starts writing the stream into `into`: the codecs' headers and the newest group of
   * pictures first, then every message; `into` is ended when the publish ends (or, if it has
   * not come, after a while). Returns what stops the writing.
   */
  feed(into: Writable): () => void;
  /** The same for another video track of the publish (an encoder's ladder), FLV, with the audio. */
  feedTrack?(track: number, into: Writable): () => void;
}

/** Where a run's frames for WebRTC playback go (src/realtime): FLV bytes by rendition index. */
export interface RealtimeTap {
  /** Where the Opus RTP goes (a loopback port) and the SSRC it is known by there; undefined: no audio. */
  audio: { port: number; ssrc: number } | undefined;
  video(rendition: number, chunk: Buffer): void;
}

/**
 * One run of a live session's media: a single ffmpeg reading the published stream from a
 * pipe, each rendition's fragmented MP4 read from its own pipe into the session's
 * packager. The playlists outlive the run: a restart or a reconnect starts another run that
 * continues them.
 */
export class LivePipeline {
  private process: SupervisedProcess | undefined;
  private run: PackagerRun | undefined;
  private playable = false;
  private faulted = false;
  private readonly stopFeeds: (() => void)[] = [];
  private markDone!: () => void;
  /** Resolves once the pipeline has ended and its last segments are in the packager. */
  readonly done = new Promise<void>((resolve) => (this.markDone = resolve));

  constructor(private readonly o: LivePipelineOptions) {}

  start(): void {
    const tracks = trackInputs(this.o.renditions);
    const { feedTrack } = this.o.input;
    if (!feedTrack && tracks.length > 0) throw new Error("this run copies tracks of an encoder's ladder, and its input has no way to read them");
    const run = this.o.packager.startRun();
    this.run = run;
    this.process = spawnSupervised(this.o.registry, {
      command: this.o.ffmpegPath,
      args: buildLiveArgs({ ...this.o, inputFormat: this.o.input.format, audioBitrate: AUDIO_BITRATE, ...(this.o.realtime ? { realtime: { audio: this.o.realtime.audio } } : {}) }),
      log: this.o.log,
      name: "ffmpeg live",
      inputPipe: true,
      onStdoutLine: (line) => this.progressLine(line),
      // The fMP4 pipes, then (for WebRTC playback) one FLV pipe per rendition.
      outputPipes: this.o.renditions.length * (this.o.realtime ? 2 : 1),
      // Then the other tracks of an encoder's ladder that rungs copy.
      inputPipes: tracks.length,
      ...(this.o.workDir ? { cwd: this.o.workDir } : {}),
      onOutput: (index, chunk) => this.output(run, index, chunk),
    });
    void this.process.ended.then((end) => this.finish(end));
    if (this.process.stdin) this.stopFeeds.push(this.o.input.feed(this.process.stdin));
    this.process.inputs.forEach((pipe, j) => this.stopFeeds.push(feedTrack!(tracks[j]!, pipe)));
    endTogether([...(this.process.stdin ? [this.process.stdin] : []), ...this.process.inputs]);
  }

  private output(run: PackagerRun, index: number, chunk: Buffer): void {
    if (this.faulted) return;
    const renditions = this.o.renditions.length;
    if (index >= renditions) return this.guard(() => this.o.realtime?.video(index - renditions, chunk));
    try {
      run.push(index, chunk);
    } catch (err) {
      // A stream the packager cannot read would only get worse: stop this run, say why.
      this.faulted = true;
      this.process?.kill();
      this.o.onFault(err);
      return;
    }
    if (!this.playable && run.playable) {
      this.playable = true;
      this.guard(() => this.o.onPlayable());
    }
  }

  /** `-progress pipe:1` lines: out_time_us is the furthest any output has written. */
  private progressLine(line: string): void {
    if (!line.startsWith("out_time_us=")) return;
    const us = Number(line.slice(12));
    if (Number.isFinite(us) && us >= 0) this.guard(() => this.o.onOutputTime?.(us / 1e6));
  }

  /** Runs a callback of the session's; a throw is reported, never thrown into a stream handler. */
  private guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.o.onFault(err);
    }
  }

  /**
   * Stops ffmpeg and resolves once the pipeline has ended: its input ends (a blocked read of a
   * pipe is restarted after SIGINT, so the signal alone would not reach an idle one), then
   * SIGINT; either way it flushes its last fragments.
   */
  async stop(graceMs = 3000): Promise<void> {
    if (!this.process) return;
    for (const stop of this.stopFeeds) stop();
    this.process.stdin?.end();
    for (const input of this.process.inputs) input.end();
    await this.process.stop(graceMs);
    await this.done;
  }

  private finish(end: ProcessEnd): void {
    for (const stop of this.stopFeeds) this.guard(stop);
    // 'close' came after the pipes drained: the run's last fragments are in; its open segments close.
    this.guard(() => this.run?.end());
    this.markDone();
    this.guard(() => this.o.onEnded(end));
  }
}

/**
 * A run's input pipes end together: ffmpeg goes on while any input does, so one cut off (its
 * reader fell behind the publisher) would leave that input's rungs frozen under a run that never
 * ends, and is never restarted. Ending the others ends the run as the end of a single input does.
 */
function endTogether(pipes: readonly Writable[]): void {
  if (pipes.length < 2) return;
  for (const pipe of pipes) pipe.once("close", () => pipes.forEach((p) => p.end()));
}
