import path from "node:path";
import type { SessionRecord, Store, StreamRecord } from "../db";
import type { EventSink } from "../events";
import type { Logger } from "../log";
import { renditionLadder } from "../media/ladder";
import { LivePipeline } from "../media/livePipeline";
import type { ProcessEnd, ProcessRegistry } from "../media/supervisedProcess";
import type { LiveSessionMetrics, Metrics } from "../metrics";
import type { LiveSessionInfo, LiveSessionObserver } from "./observer";

export interface LiveSessionDeps {
  store: Store;
  events: EventSink;
  log: Logger;
  registry: ProcessRegistry;
  ffmpegPath: string;
  hlsDir: string;
  /** Where the pipeline pulls a published stream from the local RTMP server. */
  rtmpInputUrl(streamKey: string): string;
  segmentSeconds: number;
  listSize: number;
  disconnectPublisher(publisherId: string): void;
  observers: LiveSessionObserver[];
  /** Live sessions, transcode speed, ingest bitrate, pipeline failures (GET /metrics). */
  metrics?: Pick<Metrics, "liveSessionStarted">;
}

export type EndReason = "publisher left" | "suspended" | "deleted" | "terminated" | "pipeline failed" | "shutdown";

/** How long ffmpeg gets to see end-of-stream and finish its playlists before it is stopped. */
const PUBLISHER_GONE_GRACE_MS = 1200;

/** A pipeline that dies under a live publisher is restarted this many times, then the session ends. */
export const MAX_PIPELINE_RESTARTS = 3;

/** Wait before restart n (0-based): 0.5 s, 1 s, 2 s. Short: viewers are waiting. */
export const restartDelayMs = (n: number) => 500 * 2 ** n;

/**
 * One accepted publish, from the RTMP publish to the end of its HLS: the session row and its
 * child stream object, the pipeline, isActive and stream.started/stream.idle (spec 3.1).
 */
export class LiveSession {
  readonly session: SessionRecord;
  readonly info: LiveSessionInfo;
  private pipeline: LivePipeline;
  private restarts = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private lastEnd: ProcessEnd | undefined;
  private readonly log: Logger;
  private readonly metrics: LiveSessionMetrics | undefined;
  private started = false;
  private endReason: EndReason | undefined;
  private publisherIsConnected = true;
  private markClosed!: () => void;
  /** Resolves when the session has ended and its state and events are written. */
  readonly closed = new Promise<void>((resolve) => (this.markClosed = resolve));

  constructor(
    readonly stream: StreamRecord,
    readonly publisherId: string,
    private readonly deps: LiveSessionDeps,
    private readonly onClosed: (s: LiveSession) => void,
  ) {
    this.session = deps.store.sessions.start(stream);
    this.log = deps.log.child({ streamId: stream.id, sessionId: this.session.id });
    this.metrics = deps.metrics?.liveSessionStarted({ streamId: stream.id, sessionId: this.session.id, publisherId });
    this.info = {
      streamId: stream.id,
      sessionId: this.session.id,
      userId: stream.userId,
      playbackId: stream.playbackId!,
      hlsDir: path.join(deps.hlsDir, stream.playbackId!),
      renditions: renditionLadder(this.session.profiles, deps.segmentSeconds),
      sourceUrl: deps.rtmpInputUrl(stream.streamKey!),
      log: this.log,
    };
    this.pipeline = this.newPipeline();
  }

  private newPipeline(resumeFrom?: number[]): LivePipeline {
    const { deps } = this;
    return new LivePipeline({
      ffmpegPath: deps.ffmpegPath,
      inputUrl: this.info.sourceUrl,
      outDir: this.info.hlsDir,
      renditions: this.info.renditions,
      segmentSeconds: deps.segmentSeconds,
      listSize: deps.listSize,
      // A restarted pipeline writes new names: cached segments of the old one stay valid.
      segmentPrefix: this.session.id.slice(0, 8) + (resumeFrom ? `r${this.restarts}` : ""),
      log: this.log,
      registry: deps.registry,
      onPlayable: () => this.playable(),
      onProgress: (delta) => {
        deps.store.sessions.addProgress(this.session.id, delta);
        this.metrics?.progress(delta.sourceSegmentsDuration);
      },
      onSegment: (segment) => {
        for (const o of deps.observers) o.segmentWritten?.(this.info, segment);
      },
      onEnded: (end) => this.pipelineEnded(end),
      resumeFrom,
    });
  }

  start(): void {
    this.log.info({ profiles: this.session.profiles.map((p) => p.name), record: this.session.record }, "live session started");
    this.pipeline.start();
  }

  /** Its publisher is still pushing (no one may take over the stream). */
  get publisherConnected(): boolean {
    return this.publisherIsConnected;
  }

  get isLive(): boolean {
    return this.started && this.endReason === undefined;
  }

  /** The publisher left: ffmpeg gets end-of-stream and finishes; make sure it does, promptly. */
  publisherGone(): void {
    this.publisherIsConnected = false;
    this.endReason ??= "publisher left";
    if (this.cancelRestart()) return;
    setTimeout(() => void this.pipeline.stop(1000), PUBLISHER_GONE_GRACE_MS).unref();
  }

  /** Ends the session now: the publisher is disconnected and the pipeline stopped. */
  async stop(reason: EndReason): Promise<void> {
    this.endReason ??= reason;
    if (this.publisherIsConnected) {
      this.publisherIsConnected = false;
      this.deps.disconnectPublisher(this.publisherId);
    }
    if (!this.cancelRestart()) await this.pipeline.stop(2000);
    await this.closed;
  }

  /** A restart was waiting: the session ends instead. True when there was one. */
  private cancelRestart(): boolean {
    if (!this.restartTimer) return false;
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    this.ended(this.lastEnd!);
    return true;
  }

  /**
   * ffmpeg exited. If it failed while the publisher is still pushing and nothing asked the
   * session to end, start a new pipeline that continues the same playlists (bounded retries
   * with back-off); otherwise the session ends.
   */
  private pipelineEnded(end: ProcessEnd): void {
    this.lastEnd = end;
    const failedUnderPublisher = this.endReason === undefined && this.publisherIsConnected && end.code !== 0;
    if (!failedUnderPublisher || this.restarts >= MAX_PIPELINE_RESTARTS) return this.ended(end);
    const delay = restartDelayMs(this.restarts);
    this.log.warn({ attempt: this.restarts + 1, of: MAX_PIPELINE_RESTARTS, inMs: delay, code: end.code, signal: end.signal }, "pipeline died under a live publisher: restarting it");
    this.metrics?.pipelineRestarted();
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      const resumeFrom = this.pipeline.isPlayable ? this.pipeline.lastSeqs : undefined;
      this.restarts++;
      this.pipeline = this.newPipeline(resumeFrom);
      this.pipeline.start();
    }, delay);
  }

  private playable(): void {
    if (this.endReason !== undefined || this.started) return;
    this.started = true;
    this.metrics?.playable();
    this.deps.store.streams.setActive([this.stream.id, this.session.id], true);
    this.log.info("stream is live: HLS playable");
    this.deps.events.raise("stream.started", this.stream.id, { sessionId: this.session.id });
    for (const o of this.deps.observers) o.sessionLive(this.info);
  }

  private ended(end: ProcessEnd): void {
    const reason = this.endReason ?? (end.code === 0 ? "publisher left" : "pipeline failed");
    this.endReason = reason;
    this.metrics?.ended(reason);
    this.pipeline.endPlaylists();
    const { store } = this.deps;
    store.sessions.end(this.session.id);
    store.streams.setActive([this.stream.id, this.session.id], false);
    const s = store.sessions.get(this.session.id)!;
    this.log.info({ reason, durationSeconds: s.sourceSegmentsDuration, segments: s.sourceSegments }, "live session ended");
    // stream.idle pairs with stream.started: exactly one for each.
    if (this.started) this.deps.events.raise("stream.idle", this.stream.id, { sessionId: this.session.id });
    for (const o of this.deps.observers) o.sessionEnded(this.info);
    if (this.publisherIsConnected) {
      // The pipeline died under a live publisher: disconnect it, so that it reconnects into
      // a fresh session instead of pushing into nothing.
      this.publisherIsConnected = false;
      this.deps.disconnectPublisher(this.publisherId);
    }
    this.onClosed(this);
    this.markClosed();
  }
}
