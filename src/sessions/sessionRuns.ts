import path from "node:path";
import type { Writable } from "node:stream";
import { PASSTHROUGH_VIDEO } from "../ingest";
import type { Logger } from "../log";
import { PART_SECONDS } from "../hls";
import type { LiveFeed, StartOpus } from "../realtime";
import {
  LivePipeline,
  LiveStills,
  OpusEncoder,
  PackagingRun,
  PIPELINE_SCHEDULE,
  RestartLoop,
  restartDelayMs as restartDelay,
  THUMBNAIL_FILE,
  trackInputs,
  type LivePipelineOptions,
  type PackagingRunOptions,
  type PipeFormat,
  type ProcessEnd,
} from "../media";
import type { Rendition } from "../shapes";
import type { LiveSessionMetrics } from "../metrics";
import type { Clock, ClockTimer } from "./clock";
import { describeExit, type EndReason } from "./endReason";
import type { LiveMeters } from "./liveMeters";
import type { LiveSessionInfo } from "./observer";
import type { SessionHls } from "./sessionHls";
import type { StreamRuntimeDeps } from "./streamRuntime";

// A live session's pipeline runs: which kind each one is and what it is given, one at a time
// (a superseded run drains before the next starts), restarted with back-off under a live
// publisher, and when a run became playable.

/** What a session needs of one pipeline run. */
export type LivePipelineRun = Pick<LivePipeline, "start" | "stop">;

/**
 * A pipeline that dies under a live publisher is restarted this many times, 0.5, 1 and 2 s
 * after (short: viewers are waiting), then the session ends. A run that played for a minute
 * wipes the count: occasional crashes over hours are not a crash loop.
 */
export const MAX_PIPELINE_RESTARTS = PIPELINE_SCHEDULE.maxFailures!;

/** Wait before restart n (0-based). */
export const restartDelayMs = (n: number) => restartDelay(n + 1, PIPELINE_SCHEDULE);

/** A ladder that copies the source (no profiles): the packager takes the source's video as it is. */
export function passesThrough(renditions: readonly Rendition[]): boolean {
  return renditions.every((r) => r.encode === null);
}

/**
 * Whether a publisher whose tracks plan `next` can continue a session with these renditions: the
 * same ladder, rung for rung. A session that takes tracks of its encoder's ladder (multitrack) as
 * renditions needs those tracks again; one that encodes everything takes any source.
 */
export function sameLadder(renditions: readonly Rendition[], next: readonly Rendition[]): boolean {
  return renditions.length === next.length && renditions.every((r, i) => JSON.stringify(r) === JSON.stringify(next[i]));
}

/** How a run reads its source, and whether it packages the source as sent (no ffmpeg). */
export interface RunForm {
  format: PipeFormat;
  packagesSource: boolean;
}

/**
 * FLV carries H.264 only: HEVC and AV1 sources come as fragmented MP4 (its codec is known by
 * now: the ingest starts a publish on its first video tag). Passed through, no source needs
 * ffmpeg at all, and neither does an encoder's own ladder: the ingest writes them as LL-HLS
 * parts for the packager. The form is then what a still (a thumbnail) reads.
 */
export function runForm(codec: string | undefined, renditions: readonly Rendition[]): RunForm {
  const format: PipeFormat = codec === undefined || codec === PASSTHROUGH_VIDEO ? "flv" : "mp4";
  return { format, packagesSource: passesThrough(renditions) && (codec !== undefined || renditions.length > 1) };
}

/** Whether WebRTC viewers of a source packaged as sent get its own frames: H.264 (what WebRTC players decode), one track. */
export function sourceFramesPlay(form: RunForm, renditions: number): boolean {
  return form.packagesSource && form.format === "flv" && renditions === 1;
}

/** What a WebRTC viewer of a source packaged as sent is told when it cannot play its frames. */
export function noWebrtcReason(renditions: number, codec: string | undefined): string {
  const what = renditions > 1 ? "its encoder's own renditions (multitrack)" : `its ${codec ?? "source"} video`;
  return `this stream plays ${what} as sent, over HLS only: WebRTC playback carries H.264 from a single-track source or from the server's ladder (give the stream profiles for it)`;
}

/**
 * A run that read the publish as MP4 (or parts) ends when the publisher's decoder configuration
 * changes (an init states one): the next run starts at once with the new one, not counted as a
 * failure, unless the last such restart was less than this long ago (a publisher changing its
 * configuration all the time gets the failure count's back-off and bound).
 */
export const CONFIG_CHANGE_RESTART_MS = 10_000;

/** Whether a run's end is its input's new decoder configuration: a clean end, of an MP4-reading run, with a change since it started. */
export function endedForNewConfiguration(end: Pick<ProcessEnd, "code" | "requested">, readsMp4: boolean, changesAtStart: number | undefined, changesNow: number | undefined): boolean {
  return end.code === 0 && !end.requested && readsMp4 && changesAtStart !== undefined && changesNow !== undefined && changesNow > changesAtStart;
}

/** What follows the current run's exit. */
export type AfterRun = "finish" | "wait" | "restart";

/**
 * An ending session is finished by its run's exit; without a publisher the session waits for
 * its window; under one, the run failed (it never ends by itself there) and is restarted.
 */
export function afterRun(ending: boolean, hasPublisher: boolean): AfterRun {
  if (ending) return "finish";
  return hasPublisher ? "restart" : "wait";
}

/** What the runs need of the session they serve. */
export interface RunHost {
  /** The publisher feeding the session now; undefined while it waits for one. */
  publisherId(): string | undefined;
  /** The session is ending: no run starts, and the current one's exit finishes it. */
  ending(): boolean;
  finished(): boolean;
  /** Something in the media path threw: the session ends. */
  fault(err: unknown): void;
  stop(reason: EndReason, detail: string): void;
  finish(): void;
  /** The run's first segments are playable: the stream goes live. */
  live(p: LivePipelineRun): void;
  /** A run is under way: its speed is watched. */
  started(): void;
  /** Why media cannot be written now; nothing when it can. */
  storageProblem(): string | undefined;
}

export interface SessionRunsDeps {
  runtime: Pick<StreamRuntimeDeps, "ffmpegPath" | "readSource" | "segmentSeconds" | "lowLatency" | "ffmpegCmaf" | "registry" | "publisherStats" | "pipelines" | "metrics">;
  info: LiveSessionInfo;
  hls: SessionHls;
  feed: LiveFeed | undefined;
  meters: LiveMeters;
  metrics: LiveSessionMetrics | undefined;
  log: Logger;
  clock: Clock;
  host: RunHost;
}

export class SessionRuns {
  private pipeline: LivePipelineRun | undefined;
  /** A superseded run (its publisher was replaced) finishing before the next one starts. */
  private previous: LivePipelineRun | undefined;
  /** Pipelines started: each later one continues the playlists after a discontinuity. */
  private runs = 0;
  /** Restarts after a failure under the current publisher: back-off, a bound, one log line each. */
  private readonly restarts: RestartLoop;
  /** When the current run became playable (a long healthy run forgives earlier failures). */
  private playableAt: number | undefined;
  /** Some run made the playlists playable: later runs continue them. */
  private media = false;
  private lastEnd: ProcessEnd | undefined;
  /** The current run reads MP4 (or parts), and the publisher's configuration changes when it started. */
  private runReadsMp4 = false;
  private changesAtStart: number | undefined;
  /** When a run was last restarted for a new configuration (uncounted). */
  private configRestartAt = -Infinity;

  constructor(private readonly d: SessionRunsDeps) {
    const { clock } = d;
    this.restarts = new RestartLoop({
      kind: "pipeline",
      what: "pipeline",
      schedule: PIPELINE_SCHEDULE,
      log: d.log,
      metrics: d.runtime.metrics?.restarts,
      timers: { now: () => clock.now(), setTimeout: (fn, ms) => clock.setTimeout(fn, ms), clearTimeout: (t) => clock.clearTimeout(t as ClockTimer) },
    });
  }

  /** The run feeding the playlists now. */
  get current(): LivePipelineRun | undefined {
    return this.pipeline;
  }

  /** A superseded run still finishing its segments. */
  get draining(): LivePipelineRun | undefined {
    return this.previous;
  }

  /** Runs started so far. */
  get count(): number {
    return this.runs;
  }

  /** Some run made the playlists playable. */
  get hasMedia(): boolean {
    return this.media;
  }

  /** A publisher is back: earlier failures are forgiven. */
  recovered(): void {
    this.restarts.recovered();
  }

  /** A restart that was waiting will not happen. */
  cancelRestart(): void {
    this.restarts.cancel();
  }

  /**
   * The previous run (or one still draining from an earlier hand-over) finishes what it had
   * first: runs never overlap, the next one continues the playlists after it.
   */
  handOver(publisherId: string): void {
    if (this.pipeline) {
      this.previous = this.pipeline;
      this.pipeline = undefined;
    }
    const old = this.previous;
    if (!old) return this.start();
    void old.stop(1000).then(() => {
      if (this.previous === old) this.previous = undefined;
      if (this.d.host.publisherId() === publisherId && !this.d.host.ending() && !this.pipeline) this.start();
    });
  }

  start(): void {
    const { host, hls, feed, info, runtime } = this.d;
    if (host.ending() || host.finished()) return;
    const run = this.runs++;
    this.playableAt = undefined;
    this.d.meters.newRun();
    if (run === 0) {
      try {
        hls.resetFiles();
      } catch (err) {
        return host.fault(err);
      }
    }
    const publisherId = host.publisherId();
    const stats = publisherId !== undefined ? runtime.publisherStats(publisherId) : undefined;
    const codec = stats?.videoCodec;
    const form = runForm(codec, info.renditions);
    const { format, packagesSource } = form;
    this.runReadsMp4 = format === "mp4" || packagesSource;
    this.changesAtStart = stats?.configChanges;
    // Beside the playlists: served at /hls/<playbackId>/thumbnail.jpg, left there when the session ends.
    const thumbnailFile = path.join(info.hlsDir, THUMBNAIL_FILE);
    // A run that decodes nothing to take pictures from (or copies rungs from several inputs: see
    // liveArgs.ts) gets its thumbnail taken when one is asked for.
    // One per session, whatever its runs: a still in flight when a run replaces another is the
    // one the next viewer waits for, not a second process beside it.
    const keepsThumbnail = !packagesSource && trackInputs(info.renditions).length === 0;
    const stillInput = { format, feed: (into: Writable) => runtime.readSource(info.streamId, into, format) };
    if (keepsThumbnail) hls.stills = undefined;
    else if (hls.stills) hls.stills.readFrom(stillInput);
    else hls.stills = new LiveStills({ ffmpegPath: runtime.ffmpegPath, registry: runtime.registry, log: this.d.log, output: thumbnailFile, input: stillInput });
    const options: LivePipelineOptions = {
      ffmpegPath: runtime.ffmpegPath,
      input: {
        name: info.streamId,
        format,
        feed: (into) => runtime.readSource(info.streamId, into, format),
        // Rungs copied from the other tracks of an encoder's ladder (H.264, so FLV).
        feedTrack: (track, into) => runtime.readSource(info.streamId, into, "flv", track),
      },
      renditions: info.renditions,
      segmentSeconds: runtime.segmentSeconds,
      ...(runtime.lowLatency ? { fragmentMicros: PART_SECONDS * 1e6 } : {}),
      cmaf: runtime.ffmpegCmaf !== false,
      packager: hls.packager,
      // The source's audio is known by now (the ingest admits a publish once it is).
      ...(feed && !packagesSource ? { realtime: feed.startRun(!!publisherId && stats?.hasAudio === true) } : {}),
      workDir: info.hlsDir,
      thumbnailFile,
      log: this.d.log,
      registry: runtime.registry,
      onPlayable: () => this.playable(pipeline),
      onOutputTime: (seconds) => this.outputTime(pipeline, seconds),
      onEnded: (end) => this.ended(pipeline, end),
      // A run already superseded cannot fail the one that replaced it.
      onFault: (err) => (pipeline === this.pipeline ? host.fault(err) : this.d.log.warn({ err }, "a superseded pipeline run failed")),
    };
    const ownFrames = feed && sourceFramesPlay(form, info.renditions.length) ? this.sourceFrames(feed, stats?.hasAudio === true) : undefined;
    if (packagesSource && !ownFrames) feed?.runWithoutFrames(noWebrtcReason(info.renditions.length, codec));
    const pipeline: LivePipelineRun = runtime.pipelines
      ? runtime.pipelines(options)
      : packagesSource
        ? new PackagingRun({
            ...options,
            inputs: info.renditions.map((r) => ({ name: info.streamId, feed: (into) => runtime.readSource(info.streamId, into, "parts", r.track) })),
            ...(ownFrames ? { frames: ownFrames } : {}),
          })
        : new LivePipeline(options);
    this.pipeline = pipeline;
    try {
      pipeline.start();
    } catch (err) {
      this.pipeline = undefined;
      host.fault(err);
      return;
    }
    host.started();
  }

  /**
   * WebRTC playback of a run that packages the source: the publish as FLV beside the packager,
   * its frames as sent, its audio encoded to Opus while someone watches.
   */
  private sourceFrames(feed: LiveFeed, hasAudio: boolean): PackagingRunOptions["frames"] {
    const { runtime, info, log } = this.d;
    const startOpus: StartOpus = (audio) => new OpusEncoder({ ffmpegPath: runtime.ffmpegPath, registry: runtime.registry, log, audio });
    const tap = feed.startSourceRun(hasAudio ? startOpus : undefined);
    return { feed: (into) => runtime.readSource(info.streamId, into, "flv"), write: (chunk) => tap.write(chunk), stop: () => tap.stop() };
  }

  /**
   * A run's ffmpeg exited. Under a publisher, a failure restarts it (bounded, with back-off)
   * and a clean exit (end-of-stream from a replaced publisher) starts the next run at once;
   * without one, the session waits for its window; when the session ends, it is finished.
   */
  private ended(p: LivePipelineRun, end: ProcessEnd): void {
    if (p !== this.pipeline) return; // a run already superseded (a reconnect): the next one is on its way
    const { host } = this.d;
    this.pipeline = undefined;
    this.lastEnd = end;
    const next = afterRun(host.ending(), host.publisherId() !== undefined);
    if (next === "finish") return host.finish();
    if (next === "wait") return; // the window decides
    const publisherId = host.publisherId();
    const changesNow = publisherId !== undefined ? this.d.runtime.publisherStats(publisherId)?.configChanges : undefined;
    const now = this.d.clock.now();
    if (endedForNewConfiguration(end, this.runReadsMp4, this.changesAtStart, changesNow) && now - this.configRestartAt >= CONFIG_CHANGE_RESTART_MS) {
      this.configRestartAt = now;
      this.d.log.info("the publisher's decoder configuration changed: the next run starts with the new one");
      return this.start();
    }
    // Under its publisher a run never ends by itself: a clean exit means its input was cut
    // (it fell too far behind: see the ingest's reader cap). Both count as failures, so a
    // pipeline that cannot keep up ends instead of looping. A long healthy run earns a clean slate.
    // A full or unwritable disk, or this stream's folder alone, fails every restart too: end now, and say so.
    const storage = host.storageProblem();
    if (storage) return void host.stop("storage unavailable", storage);
    const playedForMs = this.playableAt === undefined ? undefined : this.d.clock.now() - this.playableAt;
    this.playableAt = undefined;
    const restarted = this.restarts.failed("died under a live publisher", () => this.start(), {
      ranForMs: playedForMs,
      fields: { code: end.code, signal: end.signal, of: MAX_PIPELINE_RESTARTS },
    });
    if (restarted === undefined) return void host.stop("pipeline failed", describeExit(end, MAX_PIPELINE_RESTARTS));
    this.d.metrics?.pipelineRestarted();
  }

  private playable(p: LivePipelineRun): void {
    const { host } = this.d;
    if (p !== this.pipeline || host.ending() || host.publisherId() === undefined) return;
    try {
      this.d.hls.writeMaster();
    } catch (err) {
      return host.fault(err);
    }
    this.media = true;
    this.playableAt = this.d.clock.now();
    host.live(p);
  }

  /** ffmpeg's output clock against the publisher's: the transcode's speed. */
  private outputTime(p: LivePipelineRun, seconds: number): void {
    const publisherId = this.d.host.publisherId();
    if (p !== this.pipeline || publisherId === undefined) return;
    const stats = this.d.runtime.publisherStats(publisherId);
    if (stats) this.d.meters.outputTime(seconds, stats);
  }

  /** Why the last run failed, for a session ended as "pipeline failed" without its own detail. */
  failureDetail(): string | undefined {
    return this.lastEnd ? describeExit(this.lastEnd, Math.min(this.restarts.failures, MAX_PIPELINE_RESTARTS)) : undefined;
  }
}
