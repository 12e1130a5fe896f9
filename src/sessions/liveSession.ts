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

/**
 * One accepted publish, from the RTMP publish to the end of its HLS: the session row and its
 * child stream object, the pipeline, isActive and stream.started/stream.idle (spec 3.1).
 */
export class LiveSession {
  readonly session: SessionRecord;
  readonly info: LiveSessionInfo;
  private readonly pipeline: LivePipeline;
  private readonly log: Logger;
  private readonly metrics: LiveSessionMetrics | undefined;
  private started = false;
  private endReason: EndReason | undefined;
  private publisherConnected = true;
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
    this.pipeline = new LivePipeline({
      ffmpegPath: deps.ffmpegPath,
      inputUrl: this.info.sourceUrl,
      outDir: this.info.hlsDir,
      renditions: this.info.renditions,
      segmentSeconds: deps.segmentSeconds,
      listSize: deps.listSize,
      segmentPrefix: this.session.id.slice(0, 8),
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
      onEnded: (end) => this.ended(end),
    });
  }

  start(): void {
    this.log.info({ profiles: this.session.profiles.map((p) => p.name), record: this.session.record }, "live session started");
    this.pipeline.start();
  }

  get isLive(): boolean {
    return this.started && this.endReason === undefined;
  }

  /** The publisher left: ffmpeg gets end-of-stream and finishes; make sure it does, promptly. */
  publisherGone(): void {
    this.publisherConnected = false;
    this.endReason ??= "publisher left";
    setTimeout(() => void this.pipeline.stop(1000), PUBLISHER_GONE_GRACE_MS).unref();
  }

  /** Ends the session now: the publisher is disconnected and the pipeline stopped. */
  async stop(reason: EndReason): Promise<void> {
    this.endReason ??= reason;
    if (this.publisherConnected) {
      this.publisherConnected = false;
      this.deps.disconnectPublisher(this.publisherId);
    }
    await this.pipeline.stop(2000);
    await this.closed;
  }

  private playable(): void {
    if (this.endReason !== undefined) return;
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
    const { store } = this.deps;
    store.sessions.end(this.session.id);
    store.streams.setActive([this.stream.id, this.session.id], false);
    const s = store.sessions.get(this.session.id)!;
    this.log.info({ reason, durationSeconds: s.sourceSegmentsDuration, segments: s.sourceSegments }, "live session ended");
    // stream.idle pairs with stream.started: exactly one for each.
    if (this.started) this.deps.events.raise("stream.idle", this.stream.id, { sessionId: this.session.id });
    for (const o of this.deps.observers) o.sessionEnded(this.info);
    if (this.publisherConnected) {
      // The pipeline died under a live publisher: disconnect it, so that it reconnects into
      // a fresh session instead of pushing into nothing.
      this.publisherConnected = false;
      this.deps.disconnectPublisher(this.publisherId);
    }
    this.onClosed(this);
    this.markClosed();
  }
}
