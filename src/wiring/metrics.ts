import { CLIP_QUEUE } from "../assets";
import type { Store } from "../db";
import type { ViewerCount, ViewerCounter } from "../playback";
import type { ProcessRegistry } from "../media";
import { bullmqQueueDepth, createMetrics, waitingJobsByQueue, type Metrics, type QueueDepthReader } from "../metrics";
import { FINALIZE_QUEUE } from "../recordings";
import type { SessionManager } from "../sessions";
import { EVENT_FANOUT_QUEUE, WEBHOOK_DELIVERY_QUEUE } from "../webhooks";
import type { Wiring } from "./context";
import type { LocalRtmp } from "./sessions";

/** What the metrics read at scrape time: set as the areas that own them are wired (the metrics come first, every area feeds them). */
export interface MetricReaders {
  processes?: ProcessRegistry;
  sessions?: SessionManager;
  rtmp?: LocalRtmp;
  viewers?: ViewerCounter;
}

/** GET /metrics' registry, reading the parts of the server at scrape time. */
export function wireMetrics({ config, stops }: Wiring, store: Store): { metrics: Metrics; readers: MetricReaders } {
  const queueNames = [EVENT_FANOUT_QUEUE, WEBHOOK_DELIVERY_QUEUE, FINALIZE_QUEUE, CLIP_QUEUE];
  const queueDepth: QueueDepthReader | undefined = config.redisUrl ? bullmqQueueDepth(store.db, config.redisUrl, config.redisPrefix, queueNames) : undefined;
  if (queueDepth) stops.register("stores", "queue depth reader", () => queueDepth.close());
  const readers: MetricReaders = {};
  const open = () => readers.sessions?.runtimes().filter((r) => !r.isEnding) ?? [];
  const metrics = createMetrics({
    ffmpegProcesses: () => readers.processes?.size ?? 0,
    queueDepths: () => queueDepth?.depths() ?? waitingJobsByQueue(store.db, queueNames),
    publisherBytes: (publisherId) => readers.rtmp?.server?.bytesRead(publisherId),
    streamIssues: () => open().map((r) => r.health().kinds),
    viewers: () => viewerSeries(readers.viewers, open(), "viewers"),
    webrtcViewers: () => viewerSeries(readers.viewers, open(), "webrtc"),
  });
  return { metrics, readers };
}

/** The viewer series: one per playback id live here, so the series end with their streams. */
function viewerSeries(counter: ViewerCounter | undefined, live: { stream: { playbackId: string | null } }[], of: keyof ViewerCount): Map<string, number> {
  const counts = counter?.countsByProtocol() ?? new Map<string, ViewerCount>();
  const ids = live.map((r) => r.stream.playbackId).filter((id) => id !== null);
  return new Map(ids.map((id) => [id, counts.get(id)?.[of] ?? 0]));
}
