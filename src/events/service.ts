import type { Config } from "../config";
import type { Store } from "../db";
import type { Logger } from "../log";
import type { Metrics } from "../metrics";
import { OutboundPolicy } from "../outbound";
import { openQueue, redactUrl, type JobQueue, type QueueTuning } from "../queue";
import { EVENT_FANOUT_QUEUE, expectedDeliveryJobs, expectedFanOutJobs, fanOutHandler, WEBHOOK_DELIVERY_QUEUE, WebhookDeliverer, type DeliveryJob, type FanOutJob } from "../webhooks";
import { createEventSink, type EventSink } from "./sink";

/** Owed jobs looked for per reconciler pass and queue (the oldest first). */
const EXPECTED_JOBS_LIMIT = 20_000;

/** How long a delivery in flight may take to finish at shutdown. */
const SHUTDOWN_DELIVERY_GRACE_MS = 3000;

export interface RunningEvents {
  /** Where the rest of onair raises events. */
  events: EventSink;
  queue: JobQueue;
  /** Stops taking deliveries and waits for those in flight (each ends within its timeout). */
  stop(): Promise<void>;
}

/**
 * Events → webhook deliveries: the queue (embedded, or BullMQ with REDIS_URL), the event sink,
 * and this process's delivery workers (none when WEBHOOK_CONCURRENCY is 0).
 */
export async function startEvents(
  config: Config,
  store: Store,
  log: Logger,
  options: {
    tuning?: Partial<QueueTuning>;
    random?: () => number;
    metrics?: Pick<Metrics, "webhookDelivery">;
    /** The server's own policy; a worker process makes one from the same settings. */
    policy?: OutboundPolicy;
  } = {},
): Promise<RunningEvents> {
  const w = config.webhooks;
  /** Set at stop: a fan-out in progress yields between batches instead of finishing 20,000. */
  let stopping = false;
  const queue = await openQueue(
    store.db,
    log,
    config.redisUrl ? { kind: "bullmq", redisUrl: config.redisUrl, prefix: config.redisPrefix } : { kind: "embedded" },
    options.tuning,
  );
  const deliverer = new WebhookDeliverer(
    store,
    log,
    {
      schedule: { firstDelayMs: w.retryFirstMs, windowMs: w.retryWindowMs, jitter: 0.2 },
      timeoutMs: w.timeoutMs,
      policy: options.policy ?? new OutboundPolicy(config.outbound),
    },
    options.random,
    options.metrics,
  );
  // With Redis, jobs it lost are added again from what the database says is owed.
  queue.expect(EVENT_FANOUT_QUEUE, () => expectedFanOutJobs(store, EXPECTED_JOBS_LIMIT));
  queue.expect(WEBHOOK_DELIVERY_QUEUE, () => expectedDeliveryJobs(store, EXPECTED_JOBS_LIMIT));
  if (w.concurrency > 0) {
    // Fan-outs of one owner run in order whatever runs them. On SQLite one at a time per process
    // keeps them from competing with deliveries for the single write lock; PostgreSQL takes
    // writes side by side, so one owner's long fan-out does not hold back another owner's.
    const fanOuts = store.db.dialect === "postgres" ? 4 : 1;
    queue.process<FanOutJob>(EVENT_FANOUT_QUEUE, fanOutHandler(store, log, () => stopping), { concurrency: fanOuts });
    queue.process<DeliveryJob>(WEBHOOK_DELIVERY_QUEUE, deliverer.handle, { concurrency: w.concurrency });
  }
  log.info(
    {
      queue: queue.kind,
      ...(config.redisUrl ? { redis: redactUrl(config.redisUrl), prefix: config.redisPrefix } : {}),
      concurrency: w.concurrency,
      allowPrivateDestinations: config.outbound.allowPrivate,
      destinationAllowHosts: config.outbound.allowHosts,
    },
    "webhook delivery started",
  );

  let stopped: Promise<void> | undefined;
  return {
    events: createEventSink(store, log),
    queue,
    stop: () =>
      (stopped ??= (async () => {
        stopping = true;
        // Deliveries in flight get a moment to finish; then their connections are cut, which
        // fails the attempt (logged) and releases its job to run again after the restart.
        const cut = setTimeout(() => deliverer.close(), SHUTDOWN_DELIVERY_GRACE_MS);
        await queue.close();
        clearTimeout(cut);
        deliverer.close();
      })()),
  };
}
