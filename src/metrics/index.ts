import express from "express";
import type { Metrics } from "./registry";

export { createMetrics, type HttpMetrics, type LiveSessionMetrics, type MetricSources, type Metrics, type WebhookOutcome } from "./registry";
export { RateWindow, rateBetween, type Sample } from "./rateWindow";
export { waitingJobsByQueue } from "./queueDepth";
export { bullmqQueueDepth, type QueueDepthReader } from "./bullmqDepth";

/**
 * `GET /metrics` in the Prometheus text format. Unauthenticated, as Prometheus scrapers expect:
 * it shows stream ids and counts, never keys or URLs; keep it off the public internet if that matters.
 */
export function metricsRouter(metrics: Metrics): express.Router {
  const router = express.Router();
  router.get("/metrics", async (_req, res) => {
    const { contentType, body } = await metrics.scrape();
    res.set("cache-control", "no-store").type(contentType).send(body);
  });
  return router;
}

/** `/api` + `/stream/:id` → the route label; requests no route matched share one label. */
export function routeLabel(baseUrl: string, routePath: unknown): string {
  return typeof routePath === "string" ? baseUrl + routePath : "other";
}
