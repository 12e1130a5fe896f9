import fs from "node:fs";
import path from "node:path";
import type { Writable } from "node:stream";
import { LeaseLost, type Lease, type SessionRecord, type Store, type StreamRecord } from "../db";
import type { EventSink } from "../events";
import type { PublisherStats } from "../ingest";
import type { Logger } from "../log";
import type { HlsSegment, LiveHls } from "../hls";
import type { LiveFeed, RealtimeFeeds } from "../realtime";
import { endPlaylists, renditionLadder, type LivePipelineOptions, type SourceForm, type ProcessRegistry, type StoredSegment } from "../media";
import { dvrWindowSeconds, refusePublish, type IngestProtocol, type LiveRates, type PublishRefusal, type Rendition, type SourceTrack } from "../shapes";
import type { LiveSessionMetrics, Metrics } from "../metrics";
import { realClock, type Clock, type ClockTimer } from "./clock";
import { describeEnd, FAILED_ENDS, refusalFor, type EndReason } from "./endReason";
import type { Health } from "./health";
import { LiveMeters, SLOW_LIMIT, SLOW_WINDOW_MS } from "./liveMeters";
import type { LiveSessionInfo, LiveSessionObserver } from "./observer";
import { segmentCounters, SessionHls } from "./sessionHls";
import { passesThrough, sameLadder, SessionRuns, type LivePipelineRun } from "./sessionRuns";
import { SessionWrites } from "./sessionWrites";

export { MAX_PIPELINE_RESTARTS, restartDelayMs, type LivePipelineRun } from "./sessionRuns";

export interface StreamRuntimeDeps {
  store: Store;
  /** The node running the session (written on its row). */
  nodeId: string;
  events: EventSink;
  log: Logger;
  registry: ProcessRegistry;
  ffmpegPath: string;
  hlsDir: string;
  /**
   * Writes the stream published under an internal name (the stream id) into a reader's stdin
   * (the pipeline's ffmpeg, a source-copy push's) as FLV, from the local ingest; returns what
   * stops it (see PipelineInput).
   */
  readSource(alias: string, into: Writable, format: SourceForm, track?: number): () => void;
  segmentSeconds: number;
  listSize: number;
  /** LL-HLS (parts, blocking reload); false: plain fMP4 HLS. */
  lowLatency: boolean;
  /** The ffmpeg's mp4 muxer has `-movflags cmaf` (exact part timing from the first part). */
  ffmpegCmaf?: boolean;
  /** Where live sessions' packagers are found by the HLS routes. */
  liveHls: LiveHls;
  /** Where live sessions' frames are found by WebRTC playback; none: HLS only. */
  realtime?: RealtimeFeeds;
  /** Disconnects a publisher, telling it why when there is a refusal. */
  disconnectPublisher(publisherId: string, refusal?: PublishRefusal): void;
  observers: LiveSessionObserver[];
  /** Live sessions, transcode speed, ingest bitrate, pipeline failures (GET /metrics). */
  metrics?: Pick<Metrics, "liveSessionStarted" | "restarts">;
  /** Why media cannot be written now (full or unwritable disk); nothing when it can. */
  storageProblem: () => string | undefined;
  /** Another session of the stream is live now (a retried end must leave its isActive alone). */
  streamTakenOver: (streamId: string) => boolean;
  /** What the ingest knows of a live publisher; undefined once it is gone. */
  publisherStats: (publisherId: string) => PublisherStats | undefined;
  /** RECONNECT_WINDOW_SECONDS, for streams without their own reconnectWindow. */
  reconnectWindowSeconds: number;
  /** DVR_WINDOW_SECONDS, for streams without their own dvrWindow; 0 when absent. */
  dvrWindowSeconds?: number;
  /** Time and timers; the real clock when absent (tests advance a fake one). */
  clock?: Clock;
  /** Makes a pipeline run; an ffmpeg LivePipeline (or a PackagingRun) when absent (tests give fake pipelines). */
  pipelines?: (options: LivePipelineOptions) => LivePipelineRun;
}

/** How long ffmpeg gets to see end-of-stream and finish its segments before it is stopped. */
const PUBLISHER_GONE_GRACE_MS = 1200;

/**
 * A stream's live life (MediaMTX's path): one session, its HLS output and its observers, fed
 * by one publisher at a time. It outlives any one connection: when the publisher leaves, the
 * stream goes idle (isActive false, stream.idle) but the session, its recording and its
 * playlists stay open for the reconnect window; a publish with the same key inside it
 * continues them (a new pipeline run appends to the same playlists after a discontinuity, and
 * stream.started comes again). Errors inside its media path end this session only.
 */
export class StreamRuntime {
  readonly session: SessionRecord;
  readonly info: LiveSessionInfo;
  /** This node's hold on the stream: every write about the session is conditional on it. */
  readonly lease: Lease;
  /** The stream's control count when the session opened: a terminate stored after it ends it. */
  readonly controlSeq: number;
  /** The last control count whose changed settings this session has applied. */
  appliedControlSeq: number;
  /** Another node took the lease: this session writes and raises nothing more. */
  private leaseLost = false;
  private readonly log: Logger;
  private readonly metrics: LiveSessionMetrics | undefined;
  /** The publisher feeding it now; undefined while it waits for one. */
  private publisherId: string | undefined;
  /** Its pipeline runs, one at a time, restarted under a live publisher. */
  private readonly runs: SessionRuns;
  /** Its state and events, written under the lease. */
  private readonly writes: SessionWrites;
  /** The session's HLS: every run's fragments continue the same playlists. */
  private readonly hls: SessionHls;
  /** The session's frames for WebRTC playback (src/realtime), when it is on. */
  private readonly feed: LiveFeed | undefined;
  /** isActive is true and stream.started raised: a stream.idle is owed. */
  private active = false;
  private ending: { reason: EndReason; detail?: string } | undefined;
  private finished = false;
  private windowTimer: ClockTimer | undefined;
  private watchdog: ClockTimer | undefined;
  /** When the reconnect window runs out (ms), while the session waits for its publisher. */
  private windowEndsAt: number | undefined;
  private readonly meters: LiveMeters;
  /** Why the DVR window is shorter than asked, while it is. */
  private dvrCut: string | undefined;
  private readonly clock: Clock;
  private markClosed!: () => void;
  /** Resolves when the session has ended and its state and events are written. */
  readonly closed = new Promise<void>((resolve) => (this.markClosed = resolve));
  private markEndWritten!: () => void;
  /**
   * Resolves once the end is in the database (after retries if the disk was full), or nothing
   * is left to write (the lease was lost, the store closed): the lease is given back then.
   */
  readonly endWritten = new Promise<void>((resolve) => (this.markEndWritten = resolve));

  /**
   * Opens the stream's next session (its row written first, under the lease) for `publisherId`.
   * `lease` and `controlSeq`: what taking the stream's lease returned.
   */
  static async open(
    stream: StreamRecord,
    publisherId: string,
    deps: StreamRuntimeDeps,
    onClosed: (s: StreamRuntime) => void,
    opened: { lease: Lease; controlSeq: number; protocol?: IngestProtocol },
  ): Promise<StreamRuntime> {
    const at = (deps.clock ?? realClock).now();
    const session = await deps.store.transaction(async (tx) => {
      if (!(await tx.nodes.confirm(opened.lease))) throw new LeaseLost(opened.lease);
      return tx.sessions.start(stream, at, deps.nodeId, opened.protocol ?? "rtmp");
    });
    return new StreamRuntime(stream, session, publisherId, deps, onClosed, opened);
  }

  private constructor(
    readonly stream: StreamRecord,
    session: SessionRecord,
    publisherId: string,
    private readonly deps: StreamRuntimeDeps,
    private readonly onClosed: (s: StreamRuntime) => void,
    opened: { lease: Lease; controlSeq: number },
  ) {
    this.session = session;
    this.lease = opened.lease;
    this.controlSeq = this.appliedControlSeq = opened.controlSeq;
    this.clock = deps.clock ?? realClock;
    this.publisherId = publisherId;
    this.log = deps.log.child({ streamId: stream.id, sessionId: this.session.id });
    this.metrics = deps.metrics?.liveSessionStarted({ streamId: stream.id, sessionId: this.session.id, publisher: () => this.publisherId });
    this.info = {
      streamId: stream.id,
      sessionId: this.session.id,
      userId: stream.userId,
      playbackId: stream.playbackId!,
      hlsDir: path.join(deps.hlsDir, stream.playbackId!),
      // A passthrough stream takes an encoder's ladder (multitrack) as its own, track by track.
      renditions: renditionLadder(this.session.profiles, deps.segmentSeconds, deps.publisherStats(publisherId)?.videoTracks),
      // As FLV, for source-copy pushes (FLV is what they send on): the pipeline's runs read it in the form its codec needs.
      source: { name: stream.id, feed: (into) => deps.readSource(stream.id, into, "flv") },
      sourceCodec: () => (this.publisherId !== undefined ? deps.publisherStats(this.publisherId)?.videoCodec : undefined),
      record: session.record,
      // Fixed for the session: a PATCH takes effect from the stream's next one.
      dvrSeconds: dvrWindowSeconds(stream.dvrWindow, deps.dvrWindowSeconds ?? 0),
      log: this.log,
      leaseLost: () => this.leaseLost,
    };
    this.meters = new LiveMeters(deps.segmentSeconds);
    this.writes = new SessionWrites({
      store: deps.store,
      events: deps.events,
      log: this.log,
      clock: this.clock,
      lease: this.lease,
      streamId: stream.id,
      sessionId: session.id,
      storageProblem: () => deps.storageProblem(),
      streamTakenOver: (id) => deps.streamTakenOver(id),
      leaseLost: () => this.leaseLost,
      abandon: (why) => this.abandon(why),
    });
    this.hls = new SessionHls({
      info: this.info,
      sessionId: this.session.id,
      startedAt: this.session.createdAt,
      lowLatency: deps.lowLatency,
      segmentSeconds: deps.segmentSeconds,
      listSize: deps.listSize,
      dvrSeconds: this.info.dvrSeconds,
      ffmpegCmaf: deps.ffmpegCmaf,
      liveHls: deps.liveHls,
      log: this.log,
      run: () => this.runs.count - 1,
      onStored: (r, segment, stored, run) => this.segmentStored(r, segment, stored, run),
      onWriteFailed: (err) => this.fault(err),
    });
    this.feed = deps.realtime?.open(this.info.playbackId, this.info.renditions);
    this.runs = new SessionRuns({
      runtime: deps,
      info: this.info,
      hls: this.hls,
      feed: this.feed,
      meters: this.meters,
      metrics: this.metrics,
      log: this.log,
      clock: this.clock,
      host: {
        publisherId: () => this.publisherId,
        ending: () => this.ending !== undefined,
        finished: () => this.finished,
        fault: (err) => this.fault(err),
        stop: (reason, detail) => void this.stop(reason, detail),
        finish: () => this.finish(),
        live: (p) => void this.serially(() => this.goLive(p)),
        started: () => this.watchSpeed(),
        storageProblem: () => this.storageProblem(),
      },
    });
    this.newPublisher(publisherId);
  }

  start(): void {
    this.log.info({ profiles: this.session.profiles.map((p) => p.name), record: this.session.record }, "live session started");
    this.runs.start();
  }

  /** The session is ending: no publisher can join it (the caller waits for `closed`, then starts another). */
  get isEnding(): boolean {
    return this.ending !== undefined;
  }

  /** isActive: the HLS plays from the current publisher. */
  get isLive(): boolean {
    return this.active && this.ending === undefined;
  }

  get currentPublisher(): string | undefined {
    return this.publisherId;
  }

  get endReason(): EndReason | undefined {
    return this.ending?.reason;
  }

  /** Its ladder copies the source (no profiles): the packager takes the source's video as it is. */
  get passesThrough(): boolean {
    return passesThrough(this.info.renditions);
  }

  /** Whether a publisher with these video tracks can continue this session: they plan the same ladder (see sameLadder in sessionRuns). */
  takesTracks(tracks: readonly SourceTrack[] | undefined): boolean {
    return sameLadder(this.info.renditions, renditionLadder(this.session.profiles, this.deps.segmentSeconds, tracks));
  }

  get profiles() {
    return this.session.profiles;
  }

  /**
   * A publish of the stream's key while the session is open (a reconnect inside the window,
   * or a new publisher that replaced the previous one): the session continues with it.
   */
  attach(publisherId: string): void {
    if (this.ending) throw new Error("attach to an ending session");
    const waited = this.windowEndsAt !== undefined;
    this.clock.clearTimeout(this.windowTimer);
    this.windowTimer = undefined;
    this.windowEndsAt = undefined;
    // The ingest detaches a replaced publisher first; should one still be here, it is let go
    // without going idle: the new one carries the session on.
    const previous = this.publisherId;
    if (previous !== undefined && previous !== publisherId) this.deps.disconnectPublisher(previous, refusePublish("unavailable", "replaced by a newer publisher of this stream"));
    this.newPublisher(publisherId);
    this.runs.recovered();
    this.log.info({ publisherId, afterWindow: waited }, "a publisher is back: the session continues");
    this.cancelRestart();
    this.runs.handOver(publisherId);
  }

  /**
   * The publisher left (or was refused for what it sent): the stream goes idle at once, and
   * the session waits for a reconnect for its window (0: it ends now).
   */
  detach(publisherId: string, refusal?: string): void {
    if (this.publisherId !== publisherId || this.ending) return;
    this.publisherId = undefined;
    if (refusal) return void this.stop("media refused", refusal);
    // A restart that was waiting has no publisher to serve now.
    this.runs.cancelRestart();
    // ffmpeg gets end-of-stream and finishes its segments; make sure it does, promptly.
    const p = this.runs.current;
    if (p) this.clock.setTimeout(() => void p.stop(1000), PUBLISHER_GONE_GRACE_MS).unref();
    this.goIdle();
    void this.serially(async () => {
      // Going idle could not be recorded (the session is ending instead), or a publisher came back.
      if (this.ending || this.publisherId !== undefined) return;
      const windowSeconds = await this.windowSeconds();
      if (this.ending || this.publisherId !== undefined) return;
      if (windowSeconds === 0) {
        this.ending = { reason: "publisher left" };
        // The run ends by itself (end-of-stream, or the grace stop above) and finishes the
        // session; a run still draining is stopped first, so it cannot rewrite ended playlists.
        if (!this.runs.current) void (this.runs.draining?.stop(2000) ?? Promise.resolve()).then(() => this.finish());
        return;
      }
      this.windowEndsAt = this.clock.now() + windowSeconds * 1000;
      this.windowTimer = this.clock.setTimeout(() => void this.stop("publisher left", `it did not reconnect within ${windowSeconds} s`), windowSeconds * 1000);
      this.log.info({ reconnectWindowSeconds: windowSeconds }, "publisher left: the session waits for it to reconnect");
    });
  }

  /**
   * The session's state changes (live, idle, the window, the end) are written one at a time in
   * the order they happen: each looks at the state the previous one left.
   */
  private stateChanges: Promise<void> = Promise.resolve();

  private serially(change: () => Promise<void>): Promise<void> {
    const next = this.stateChanges.then(change).catch((err: unknown) => this.log.error({ err }, "a live session state change failed"));
    this.stateChanges = next;
    return next;
  }

  /** Ends the session now: the publisher is disconnected and the pipeline stopped. */
  async stop(reason: EndReason, detail?: string): Promise<void> {
    if (!this.ending) this.ending = { reason, detail };
    // Suspended or deleted: not one more playlist or part from memory while the run stops.
    if (reason === "suspended" || reason === "deleted") this.unpublish();
    this.clock.clearTimeout(this.windowTimer);
    this.windowTimer = undefined;
    const publisherId = this.publisherId;
    this.publisherId = undefined;
    if (publisherId !== undefined) this.deps.disconnectPublisher(publisherId, refusalFor(this.ending.reason, this.ending.detail, this.stream.id));
    // A run still draining must not write its playlists after they have ended.
    const draining = this.runs.draining;
    if (draining) await draining.stop(2000);
    this.cancelRestart();
    const current = this.runs.current;
    if (current) await current.stop(2000);
    else this.finish();
    await this.closed;
  }

  /**
   * Another node took the stream's lease (this one was away longer than a lease: a pause, a cut
   * from the database): whoever took it ended this session or continues the stream. Here it only
   * stops: the publisher is let go, the pipeline stopped, the live HLS unpublished; no state
   * is written and no event raised, now or at its end.
   */
  abandon(why: string): void {
    if (this.leaseLost) return;
    this.leaseLost = true;
    this.log.warn({ why, epoch: this.lease.epoch }, "this node lost the stream's lease: the session stops here without writing (its new holder, or the janitor, ended it)");
    this.unpublish();
    void this.stop("lease lost", why);
  }

  /** Players find the session no more: its HLS and its WebRTC viewers (told it ended). */
  private unpublish(): void {
    this.hls.unpublish();
    if (this.feed) this.deps.realtime!.remove(this.info.playbackId, this.feed);
  }

  /** Bytes per second in from the publisher and out of the pipeline, over the last 10 s. */
  rates(): LiveRates {
    return this.meters.rates(this.currentStats(), this.active);
  }

  /** The stream's health from its publisher and pipeline (Livepeer's isHealthy and issues). */
  health(): Health {
    const left = this.windowEndsAt !== undefined ? Math.max(0, (this.windowEndsAt - this.clock.now()) / 1000) : undefined;
    const names = (indexes: number[]) => indexes.map((i) => this.info.renditions[i]!.name);
    const { packager } = this.hls;
    return this.meters.health(this.currentStats(), this.active, left, { unaligned: names(packager.unalignedRenditions()), silent: names(packager.silentRenditions()) }, this.dvrCut);
  }

  /** DVR: the window in force, the seconds listed, a second's bytes in storage (see DvrSpace). */
  dvrFootprint(): { window: number; listed: number; bytesPerSecond: number } {
    return this.hls.packager.dvrFootprint;
  }

  /** DVR: list `seconds` back (storage short of room for the whole window); `issue` says so in the stream's health. */
  setDvrWindow(seconds: number, issue: string | undefined): void {
    this.hls.packager.setDvrWindow(seconds);
    this.dvrCut = issue;
  }

  private currentStats() {
    return this.publisherId !== undefined ? this.deps.publisherStats(this.publisherId) : undefined;
  }

  private async windowSeconds(): Promise<number> {
    let own: number | null | undefined;
    try {
      own = (await this.deps.store.streams.get(this.stream.id))?.reconnectWindow;
    } catch {
      own = undefined; // the database is failing: the operator's default
    }
    return own ?? this.deps.reconnectWindowSeconds;
  }

  private newPublisher(publisherId: string): void {
    this.publisherId = publisherId;
    this.meters.newPublisher(this.deps.publisherStats(publisherId));
  }

  /** A restart was waiting: it will not happen. */
  private cancelRestart(): void {
    this.runs.cancelRestart();
    if (this.ending && !this.runs.current) this.finish();
  }

  private async goLive(p: LivePipelineRun): Promise<void> {
    // A restart under a live publisher: the stream never stopped being live.
    if (this.active || p !== this.runs.current || this.ending || this.publisherId === undefined) return;
    // A session that cannot record going live (disk full) ends instead, and owes no stream.idle.
    const recorded = await this.writes.activity(true, "going live");
    if (!recorded) return void this.stop("storage unavailable", "the database cannot record the session going live");
    this.active = true;
    this.hls.packager.announce();
    this.metrics?.playable();
    this.log.info({ run: this.runs.count - 1 }, "stream is live: HLS playable");
    // Observers work from the files (recordings link them, rendition pushes read them): they
    // hear once the segments that made it playable are on disk.
    const publisher = this.publisherId;
    this.hls.afterWrites(() => {
      if (!this.active || this.ending || this.publisherId !== publisher) return;
      for (const o of this.deps.observers) this.tell(o, "sessionLive", () => o.sessionLive(this.info));
    });
  }

  /** The publisher is gone: isActive false and stream.idle now (docs/api.md#spec-31-stream-activity), the session stays open. */
  private goIdle(): void {
    void this.serially(async () => {
      // Already ending: the end writes the idle the session owes.
      if (!this.active || this.ending) return;
      await this.recordIdle();
    });
  }

  private async recordIdle(): Promise<void> {
    const recorded = await this.writes.activity(false, "going idle");
    // Not written (disk full): the end, retried until it is, owes and raises the stream.idle.
    if (!recorded) return void this.stop("storage unavailable", "the database cannot record the publisher leaving");
    this.active = false;
    this.metrics?.idle();
    for (const o of this.deps.observers) this.tell(o, "sourceLost", () => o.sourceLost?.(this.info));
  }

  /** A segment is on disk: counted, and told to observers (recordings link it). */
  private segmentStored(r: Rendition, segment: HlsSegment, stored: StoredSegment, run: number): void {
    const bytes = segment.size;
    const delta = segmentCounters(r, segment);
    this.metrics?.progress(delta.sourceSegmentsDuration);
    this.meters.segmentsWritten(bytes);
    this.writes.progress(delta);
    const written = { rendition: r, file: stored.file, uri: segment.uri, duration: segment.duration, seq: segment.msn, bytes, run, map: stored.map, programDateTime: segment.programDateTime };
    for (const o of this.deps.observers) this.tell(o, "segmentWritten", () => o.segmentWritten?.(this.info, written));
  }

  /** A run is under way: its speed is checked every 5 s from now until the session ends. */
  private watchSpeed(): void {
    if (this.watchdog) return;
    this.watchdog = this.clock.setInterval(() => this.checkSpeed(), 5000);
    this.watchdog.unref();
  }

  /** A transcode that cannot keep up for SLOW_WINDOW_MS only falls further behind: end it, saying why. */
  private checkSpeed(): void {
    if (!this.active || this.ending) return;
    const ratio = this.meters.sustainedSpeed();
    if (ratio === undefined || ratio >= SLOW_LIMIT) return;
    void this.stop("pipeline too slow", `the transcode ran at ${ratio.toFixed(2)}x real time for ${SLOW_WINDOW_MS / 1000} s: the server is short of CPU for this ladder`);
  }

  /** Why media cannot be written: the data directory's problem, or this stream's own folder's. */
  private storageProblem(): string | undefined {
    const shared = this.deps.storageProblem();
    if (shared) return shared;
    for (const r of this.info.renditions) {
      const dir = path.join(this.info.hlsDir, String(r.index));
      const probe = path.join(dir, `.probe-${process.pid}`);
      try {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(probe, "");
        fs.rmSync(probe, { force: true });
      } catch (err) {
        return `cannot write to the stream's media folder: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
      }
    }
    return undefined;
  }

  /** Something in this stream's media path threw: this session ends, no other. */
  private fault(err: unknown): void {
    const storage = this.storageProblem();
    this.log.error({ err }, "live session failed inside its media path");
    void this.stop(storage ? "storage unavailable" : "internal error", storage ?? (err instanceof Error ? err.message : String(err)));
  }

  /** An observer is told something; its throw is logged, not passed on. */
  private tell(o: LiveSessionObserver, what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.error({ err, what, observer: o.constructor.name }, "a live session observer failed");
    }
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.clock.clearTimeout(this.windowTimer);
    this.clock.clearInterval(this.watchdog);
    const end = this.ending ?? { reason: "publisher left" as const };
    const { reason } = end;
    this.metrics?.ended(reason);
    if (this.feed) this.deps.realtime!.remove(this.info.playbackId, this.feed);
    // Players waiting on a live playlist get its end; the routes fall back to the disk's copy
    // once the last writes are on it.
    this.hls.end(() => this.ended(end));
  }

  /** The end, once every segment is on disk: playlists ended, state and events written, observers told. */
  private ended(end: { reason: EndReason; detail?: string }): void {
    const { reason } = end;
    try {
      // The playlists end (players stop treating them as live); a session that never played leaves nothing.
      if (this.runs.hasMedia) endPlaylists(this.info.hlsDir);
      else fs.rmSync(this.info.hlsDir, { recursive: true, force: true });
    } catch (err) {
      this.log.error({ err }, "could not end the session's playlists");
    }
    const described = describeEnd(reason, end.detail ?? (reason === "pipeline failed" ? this.runs.failureDetail() : undefined));
    void this.serially(async () => {
      const owesIdle = this.active;
      this.active = false;
      await this.writes.end(described, owesIdle, () => this.markEndWritten());
      await this.announceEnd(reason, described);
    });
  }

  /** The end is written (or being retried): say so, tell observers, and let go. */
  private async announceEnd(reason: EndReason, described: string): Promise<void> {
    let s: SessionRecord | undefined;
    try {
      s = await this.deps.store.sessions.get(this.session.id);
    } catch {
      s = undefined;
    }
    const fields = { reason: described, durationSeconds: s?.sourceSegmentsDuration, segments: s?.sourceSegments, runs: this.runs.count };
    if (FAILED_ENDS.includes(reason)) this.log.error(fields, "live session ended");
    else this.log.info(fields, "live session ended");
    for (const o of this.deps.observers) this.tell(o, "sessionEnded", () => o.sessionEnded(this.info));
    this.onClosed(this);
    this.markClosed();
  }
}
