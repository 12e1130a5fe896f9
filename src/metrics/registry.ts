import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { RateWindow } from "./rateWindow";

// Prometheus metrics of one server. Each server has its own Registry (never prom-client's
// global one): tests run several servers in one process, and each must count only its own.

/** How a run of the webhook delivery job ended. */
export type WebhookOutcome = "delivered" | "retry" | "failed" | "cancelled";

/** What the metrics read from the rest of the server at scrape time. */
export interface MetricSources {
  /** Supervised processes running now (every ffmpeg: live pipelines, pushes, finalize). */
  ffmpegProcesses(): number;
  /** Jobs not yet done, by queue name. */
  queueDepths(): Promise<Record<string, number>> | Record<string, number>;
  /** Bytes read so far from a publisher's RTMP socket; undefined once it is gone. */
  publisherBytes(publisherId: string): number | undefined;
  /** Kinds of health issue of each stream with an open session (empty: healthy). */
  streamIssues?(): string[][];
  /**
   * Concurrent viewers this node counts, by playback id: the ids live here only (0 when nobody
   * watches), so the series end with their streams instead of growing forever.
   */
  viewers?(): ReadonlyMap<string, number>;
  /** Of those, the ones watching over WebRTC (WHEP), by playback id, as `viewers` keys them. */
  webrtcViewers?(): ReadonlyMap<string, number>;
  /** ms; tests may fix it. */
  now?(): number;
}

/** The hooks of one live session, from its publish to its end. */
export interface LiveSessionMetrics {
  /** Its HLS plays (isActive turned true). */
  playable(): void;
  /** Its publisher left; the session waits for a reconnect (isActive false). */
  idle(): void;
  /** The pipeline completed `mediaSeconds` more of the source. */
  progress(mediaSeconds: number): void;
  /** Called once; `reason` is the session's end reason. */
  ended(reason: string): void;
  /** Its pipeline died under a live publisher and is being restarted. */
  pipelineRestarted(): void;
}

/** The hooks of the HTTP app. */
export interface HttpMetrics {
  /** `route` is the pattern that matched (`/api/stream/:id`), never the raw path. */
  httpRequest(method: string, route: string, status: number, seconds: number): void;
}

export interface Metrics extends HttpMetrics {
  readonly registry: Registry;
  /** The Prometheus text exposition and its content type. */
  scrape(): Promise<{ contentType: string; body: string }>;
  /** `publisher`: the connection feeding the session now (it changes on a reconnect). */
  liveSessionStarted(ids: { streamId: string; sessionId: string; publisher(): string | undefined }): LiveSessionMetrics;
  webhookDelivery(outcome: WebhookOutcome): void;
  /** A local reader of a publish (a pipeline's pipe, a push) fell too far behind its publisher and was cut off. */
  readerCut(): void;
  /** A publisher that sent no media for PUBLISH_MEDIA_TIMEOUT_SECONDS was disconnected. */
  publisherStalled(): void;
  /** A recording file reached the object store after `ms`. */
  recordingUpload(ms: number): void;
  /** What the restart loops (src/media/restarts.ts) count: a retry scheduled, or given up. */
  readonly restarts: { counted(kind: string, outcome: "retry" | "gave_up"): void };
}

/** Trailing windows of the per-session rates, in ms. */
const BITRATE_WINDOW_MS = 10_000;
const SPEED_WINDOW_MS = 30_000;

interface TrackedSession {
  streamId: string;
  sessionId: string;
  publisher(): string | undefined;
  /** The publisher the ingest window was measuring. */
  measured: string | undefined;
  playable: boolean;
  ingest: RateWindow;
  /** Cumulative media seconds, read at each progress report of the pipeline. */
  media: RateWindow;
  mediaSeconds: number;
}

export function createMetrics(sources: MetricSources): Metrics {
  const now = sources.now ?? Date.now;
  const registry = new Registry();
  // The series every exporter has: CPU, memory, event-loop lag, open file descriptors, GC.
  collectDefaultMetrics({ register: registry });
  const live = new Map<string, TrackedSession>();
  liveSessionGauges(registry, live, sources, now);
  serverGauges(registry, sources);
  const c = counters(registry);
  return {
    registry,
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
    httpRequest(method, route, status, seconds) {
      c.httpRequests.inc({ method, route, status: String(status) });
      c.httpDuration.observe({ method, route }, seconds);
    },
    webhookDelivery(outcome) {
      c.webhookDeliveries.inc({ outcome });
    },
    readerCut: () => c.readersCut.inc(),
    publisherStalled: () => c.publishersStalled.inc(),
    recordingUpload: (ms) => c.recordingUploads.observe(ms / 1000),
    liveSessionStarted: (ids) => trackSession(ids, live, sources, now, c),
    restarts: { counted: (kind, outcome) => c.restarts.inc({ kind, outcome }) },
  };
}

/** The gauges of the live sessions themselves: how many play, their ingest bitrate, their transcode speed. */
function liveSessionGauges(registry: Registry, live: ReadonlyMap<string, TrackedSession>, sources: MetricSources, now: () => number): void {
  new Gauge({
    name: "onair_live_sessions",
    help: "Live sessions whose HLS plays (the streams with isActive true).",
    registers: [registry],
    collect() {
      this.set([...live.values()].filter((s) => s.playable).length);
    },
  });
  new Gauge({
    name: "onair_ingest_bitrate_bits_per_second",
    help: "Bits per second received from each live stream's RTMP publisher (its socket), over the last 10 s (since the publish, at first).",
    labelNames: ["stream_id"],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of live.values()) {
        const publisherId = s.publisher();
        const bytes = publisherId !== undefined ? sources.publisherBytes(publisherId) : undefined;
        if (bytes === undefined) continue;
        // Another connection counts its bytes from 0: measure it afresh.
        if (publisherId !== s.measured) {
          s.ingest.reset();
          s.measured = publisherId;
        }
        s.ingest.add(now(), bytes);
        const rate = s.ingest.perSecond();
        if (rate !== undefined) this.set({ stream_id: s.streamId }, Math.round(rate * 8));
      }
    },
  });
  new Gauge({
    name: "onair_transcode_speed",
    help: "Media seconds the live pipeline completed per wall-clock second, over its last 30 s of segments (1 keeps up with real time; below 1 falls behind).",
    // By stream only: a label per session would grow the series without bound.
    labelNames: ["stream_id"],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of live.values()) {
        // A stream waiting for its publisher has no transcode to measure.
        if (!s.playable) continue;
        const speed = s.media.perSecond();
        if (speed !== undefined) this.set({ stream_id: s.streamId }, Math.round(speed * 1000) / 1000);
      }
    },
  });
}

/** The gauges of the server as a whole, read from the rest of it at scrape time: stream health, viewers, ffmpeg processes, queue depths. */
function serverGauges(registry: Registry, sources: MetricSources): void {
  new Gauge({
    name: "onair_streams_unhealthy",
    help: "Streams with an open session whose health lists at least one issue (isHealthy false).",
    registers: [registry],
    collect() {
      this.set((sources.streamIssues?.() ?? []).filter((kinds) => kinds.length > 0).length);
    },
  });
  new Gauge({
    name: "onair_stream_issues",
    help: "Streams with an open session that have each kind of health issue (reconnecting, slow_transcode, long_keyframe_interval, bitrate_collapse, no_audio).",
    labelNames: ["issue"],
    registers: [registry],
    collect() {
      this.reset();
      for (const kinds of sources.streamIssues?.() ?? []) for (const issue of kinds) this.inc({ issue });
    },
  });
  new Gauge({
    name: "onair_viewers",
    help: "Concurrent viewers of each playback id this node packages: player sessions that asked for a playlist within VIEWER_WINDOW_SECONDS.",
    labelNames: ["playback_id"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [playback_id, n] of sources.viewers?.() ?? []) this.set({ playback_id }, n);
    },
  });
  new Gauge({
    name: "onair_viewers_webrtc",
    help: "Of onair_viewers, those watching over WebRTC (WHEP) on this node; the rest play HLS.",
    labelNames: ["playback_id"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [playback_id, n] of sources.webrtcViewers?.() ?? []) this.set({ playback_id }, n);
    },
  });
  new Gauge({
    name: "onair_ffmpeg_processes",
    help: "ffmpeg processes running (live pipelines, multistream pushes, recording finalize).",
    registers: [registry],
    collect() {
      this.set(sources.ffmpegProcesses());
    },
  });
  new Gauge({
    name: "onair_queue_depth",
    help: "Jobs waiting or running, by queue.",
    labelNames: ["queue"],
    registers: [registry],
    async collect() {
      this.reset();
      let depths: Record<string, number>;
      try {
        depths = await sources.queueDepths();
      } catch {
        return; // e.g. Redis away: the gauge is left out of this scrape, the others still answer
      }
      for (const [queue, n] of Object.entries(depths)) this.set({ queue }, n);
    },
  });
}

type Counters = ReturnType<typeof counters>;

/** The counters and histograms the server's components feed as things happen. */
function counters(registry: Registry) {
  const pipelineFailures = new Counter({
    name: "onair_pipeline_failures_total",
    help: "Live sessions ended because their ffmpeg pipeline failed after its restarts (the publisher is disconnected and may reconnect).",
    registers: [registry],
  });
  const pipelineRestarts = new Counter({
    name: "onair_pipeline_restarts_total",
    help: "Pipelines restarted after their ffmpeg died under a live publisher.",
    registers: [registry],
  });
  const webhookDeliveries = new Counter({
    name: "onair_webhook_deliveries_total",
    help: "Runs of the webhook delivery job by outcome: delivered, retry (the attempt failed and will be retried), failed (given up), cancelled (webhook deleted).",
    labelNames: ["outcome"],
    registers: [registry],
  });
  for (const outcome of ["delivered", "retry", "failed", "cancelled"] satisfies WebhookOutcome[]) webhookDeliveries.inc({ outcome }, 0);
  const readersCut = new Counter({
    name: "onair_rtmp_readers_cut_total",
    help: "Local readers of a publish (live pipelines' pipes, multistream pushes) cut off for falling more than a few seconds behind their publisher.",
    registers: [registry],
  });
  const publishersStalled = new Counter({
    name: "onair_publishers_stalled_total",
    help: "Publishers disconnected for sending no media for PUBLISH_MEDIA_TIMEOUT_SECONDS.",
    registers: [registry],
  });
  const recordingUploads = new Histogram({
    name: "onair_recording_upload_seconds",
    help: "Time to copy one recording file (segment, playlist, MP4) to the object store.",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  const httpRequests = new Counter({
    name: "onair_http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status.",
    labelNames: ["method", "route", "status"],
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: "onair_http_request_duration_seconds",
    help: "Time to answer HTTP requests (to the last byte handed to the socket), by method and route pattern.",
    labelNames: ["method", "route"],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });

  const restarts = new Counter({
    name: "onair_restarts_total",
    help: "Supervised processes (pull, srt_listener, multistream_push, pipeline) that ended on their own, by outcome: retry (started again after the back-off) or gave_up.",
    labelNames: ["kind", "outcome"],
    registers: [registry],
  });
  return { restarts, pipelineFailures, pipelineRestarts, webhookDeliveries, readersCut, publishersStalled, recordingUploads, httpRequests, httpDuration };
}

/** One live session tracked from its publish to its end. */
function trackSession(
  { streamId, sessionId, publisher }: Parameters<Metrics["liveSessionStarted"]>[0],
  live: Map<string, TrackedSession>,
  sources: MetricSources,
  now: () => number,
  c: Counters,
): LiveSessionMetrics {
  const publisherId = publisher();
  const s: TrackedSession = {
    streamId,
    sessionId,
    publisher,
    measured: publisherId,
    playable: false,
    ingest: new RateWindow(BITRATE_WINDOW_MS),
    media: new RateWindow(SPEED_WINDOW_MS),
    mediaSeconds: 0,
  };
  // The publisher's bytes are counted from the publish on.
  s.ingest.add(now(), (publisherId !== undefined ? sources.publisherBytes(publisherId) : undefined) ?? 0);
  live.set(sessionId, s);
  return {
    playable: () => void (s.playable = true),
    idle: () => {
      s.playable = false;
      // The next publisher's run is measured afresh.
      s.media.reset();
    },
    progress: (mediaSeconds) => {
      s.mediaSeconds += mediaSeconds;
      s.media.add(now(), s.mediaSeconds);
    },
    pipelineRestarted: () => c.pipelineRestarts.inc(),
    ended: (reason) => {
      if (!live.delete(sessionId)) return;
      if (reason === "pipeline failed") c.pipelineFailures.inc();
    },
  };
}
