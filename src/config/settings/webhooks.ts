import { area, flag, integer } from "../declare";

export const webhooks = area("webhooks", {
  // Spec 8: retries for about 15 minutes, the first after about 5 s. Tests compress both.
  WEBHOOK_RETRY_FIRST_MS: integer({
    default: 5_000,
    min: 1,
    max: 3_600_000,
    unit: "ms",
    doc: "First retry after a failed attempt; each later gap doubles.",
  }).at("webhooks.retryFirstMs"),
  WEBHOOK_RETRY_WINDOW_MS: integer({
    default: 15 * 60_000,
    min: 0,
    max: 7 * 24 * 3_600_000,
    unit: "ms",
    doc: "No retry later than this after the event (15 minutes, docs/api.md#spec-8-limits).",
  }).at("webhooks.retryWindowMs"),
  // At most 30 s: the embedded queue's 60 s lease must outlast an attempt.
  WEBHOOK_TIMEOUT_MS: integer({
    default: 10_000,
    min: 1,
    max: 30_000,
    unit: "ms",
    doc: "Time for one delivery attempt, connection to response.",
  }).at("webhooks.timeoutMs"),
  WEBHOOK_CONCURRENCY: integer({
    default: 16,
    min: 0,
    max: 1000,
    doc: "Deliveries in flight at once in this process. `0` (only with `REDIS_URL`): this process delivers none, `npm run worker` processes do.",
  }).at("webhooks.concurrency"),
  // Webhook attempts and delivered events are an audit trail, not data: a month by default.
  WEBHOOK_LOG_RETENTION_DAYS: integer({
    default: 30,
    min: 0,
    max: 36_500,
    unit: "days",
    doc: "Delete webhook delivery attempts (the `/webhook/{id}/log`), settled deliveries and their events older than this many days, at start and hourly (`0`: keep them). Deliveries still pending are never deleted.",
  }).at("webhookLogRetentionDays"),
  // Replaced by the outbound policy. `true` asked for what is now the default, so it is taken
  // and ignored; `false` asked for private receivers, which now needs the settings above: a
  // start that would quietly refuse them stops instead, saying which to set.
  WEBHOOK_BLOCK_PRIVATE: flag({
    default: false,
    shown: "unset",
    doc: "No longer read: `true` is the default now; `false` stops the start (use `ALLOW_PRIVATE_DESTINATIONS` or `DESTINATION_ALLOW_HOSTS`).",
  }),
});
