import path from "node:path";
import type { SessionRecord, Store, StreamRecord } from "../db";
import type { EventSink } from "../events";
import type { Logger } from "../log";
import { LivePipeline, renditionLadder, type ProcessEnd, type ProcessRegistry } from "../media";
import type { LiveRates } from "../shapes";
import { RateWindow, type LiveSessionMetrics, type Metrics } from "../metrics";
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
  /** Why media cannot be written now (full or unwritable disk); nothing when it can. */
  storageProblem?: () => string | undefined;
  /** Another session of the stream is live now (a retried end must leave its isActive alone). */
  streamTakenOver?: (streamId: string) => boolean;
  /** Bytes read so far from a publisher's connection (its ingest rate); undefined once gone. */
  publisherBytes?: (publisherId: string) => number | undefined;
}

/** Live rates span this much of the recent past. */
const RATE_WINDOW_MS = 10_000;

export type EndReason =
  | "publisher left"
  | "suspended"
  | "deleted"
  | "terminated"
  | "pipeline failed"
  | "storage unavailable"
  | "media refused"
  | "shutdown";

/** An end reason with what an operator needs to act on it (kept as the session's endReason). */
export function describeEnd(reason: EndReason, detail?: string): string {
  return detail ? `${reason}: ${detail}` : reason;
}

/** ffmpeg's exit, for an end reason: no stderr, which would carry the source url and its key. */
function describeExit(end: ProcessEnd, restarts: number): string {
  const how = end.code !== null ? `ffmpeg exited with code ${end.code}` : `ffmpeg was killed by ${end.signal}`;
  return restarts > 0 ? `${how} after ${restarts} restart${restarts === 1 ? "" : "s"}` : how;
}

/** How long ffmpeg gets to see end-of-stream and finish its playlists before it is stopped. */
const PUBLISHER_GONE_GRACE_MS = 1200;

/** How often a session end that could not be written (disk full) is tried again. */
const END_RETRY_MS = 2000;

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
  private endDetail: string | undefined;
  private publisherIsConnected = true;
  private readonly ingestRate = new RateWindow(RATE_WINDOW_MS);
  private readonly outgoingRate = new RateWindow(RATE_WINDOW_MS);
  private bytesOut = 0;
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
    const now = Date.now();
    this.ingestRate.add(now, deps.publisherBytes?.(publisherId) ?? 0);
    this.outgoingRate.add(now, 0);
    this.pipeline = this.newPipeline();
  }

  /** Bytes per second in from the publisher and out of the pipeline, over the last 10 s. */
  rates(): LiveRates {
    const now = Date.now();
    const received = this.deps.publisherBytes?.(this.publisherId);
    if (received !== undefined) this.ingestRate.add(now, received);
    this.outgoingRate.add(now, this.bytesOut);
    return { ingestRate: Math.round(this.ingestRate.perSecond() ?? 0), outgoingRate: Math.round(this.outgoingRate.perSecond() ?? 0) };
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
        this.metrics?.progress(delta.sourceSegmentsDuration);
        this.bytesOut += delta.sourceBytes + delta.transcodedBytes;
        this.outgoingRate.add(Date.now(), this.bytesOut);
        this.write("segment counters", () => deps.store.sessions.addProgress(this.session.id, delta));
      },
      onSegment: (segment) => {
        for (const o of deps.observers) o.segmentWritten?.(this.info, { ...segment, run: this.restarts });
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
  async stop(reason: EndReason, detail?: string): Promise<void> {
    if (this.endReason === undefined) {
      this.endReason = reason;
      this.endDetail = detail;
    }
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
    if (failedUnderPublisher) {
      // A full or unwritable disk fails every restart too: end now, and say so.
      const storage = this.deps.storageProblem?.();
      if (storage) {
        this.endReason = "storage unavailable";
        this.endDetail = storage;
      }
    }
    if (!failedUnderPublisher || this.endReason !== undefined || this.restarts >= MAX_PIPELINE_RESTARTS) return this.ended(end);
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
    const { store, events } = this.deps;
    // isActive and stream.started together or not at all: a session that cannot record going
    // live (disk full) ends instead, and owes no stream.idle.
    const recorded = this.write("going live", () =>
      store.db.transaction(() => {
        store.streams.setActive([this.stream.id, this.session.id], true);
        events.raise("stream.started", this.stream.id, { sessionId: this.session.id });
      })(),
    );
    if (!recorded) return void this.stop("storage unavailable", "the database cannot record the session going live");
    this.started = true;
    this.metrics?.playable();
    this.log.info("stream is live: HLS playable");
    for (const o of this.deps.observers) o.sessionLive(this.info);
  }

  /**
   * A state write from a media callback: if the disk is full it throws, and that must not
   * take the process (and every other session) down. Logged; storage is checked at once.
   */
  private write(what: string, write: () => void): boolean {
    try {
      write();
      return true;
    } catch (err) {
      this.log.error({ err, what }, "could not record live session state");
      this.deps.storageProblem?.();
      return false;
    }
  }

  /**
   * The session's end, written until it is: closed, not active, and the stream.idle its
   * stream.started is owed, in one transaction. A full disk delays it (retried every 2 s
   * while the server runs); a restart's recovery closes what is still open then.
   */
  private recordEnd(described: string, at = Date.now(), attempt = 1): void {
    const { store, events } = this.deps;
    const recorded = this.write("session end", () =>
      store.db.transaction(() => {
        store.sessions.end(this.session.id, at, described);
        // Written late, while a successor is live: only this session's own child stream.
        const takenOver = attempt > 1 && this.deps.streamTakenOver?.(this.stream.id) === true;
        store.streams.setActive(takenOver ? [this.session.id] : [this.stream.id, this.session.id], false);
        // stream.idle pairs with stream.started: exactly one for each.
        if (this.started) events.raise("stream.idle", this.stream.id, { sessionId: this.session.id });
      })(),
    );
    if (!recorded && store.db.open) setTimeout(() => this.recordEnd(described, at, attempt + 1), END_RETRY_MS).unref();
    else if (recorded && attempt > 1) this.log.info({ attempt }, "session end recorded after storage came back");
  }

  private ended(end: ProcessEnd): void {
    const reason = this.endReason ?? (end.code === 0 ? "publisher left" : "pipeline failed");
    if (this.endReason === undefined && reason === "pipeline failed") this.endDetail = describeExit(end, this.restarts);
    this.endReason = reason;
    this.metrics?.ended(reason);
    this.pipeline.endPlaylists();
    const described = describeEnd(reason, this.endDetail);
    this.recordEnd(described);
    const s = this.deps.store.sessions.get(this.session.id);
    const fields = { reason: described, durationSeconds: s?.sourceSegmentsDuration, segments: s?.sourceSegments };
    if (reason === "pipeline failed" || reason === "storage unavailable") this.log.error(fields, "live session ended");
    else this.log.info(fields, "live session ended");
    for (const o of this.deps.observers) {
      try {
        o.sessionEnded(this.info);
      } catch (err) {
        this.log.error({ err }, "an observer failed at the session's end");
      }
    }
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
