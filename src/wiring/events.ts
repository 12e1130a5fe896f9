import type { Store } from "../db";
import { startEvents, type EventSink } from "../events";
import type { Metrics } from "../metrics";
import { OutboundPolicy } from "../outbound";
import type { JobQueue } from "../queue";
import { startWebhookHistoryRetention } from "../webhooks";
import type { Wiring } from "./context";

export interface EventsArea {
  /** One outbound policy for every connection a user's input makes: webhook deliveries, multistream pushes, and the API's checks of their urls. */
  outbound: OutboundPolicy;
  /** Where domain events are raised (durable; each becomes webhook deliveries). */
  events: EventSink;
  queue: JobQueue;
}

/**
 * Events → webhook deliveries (src/events, src/queue, src/webhooks). raise() writes the event,
 * its deliveries and their jobs in one transaction (with REDIS_URL, the jobs then go on to
 * BullMQ), and wakes this process's delivery workers. Deliveries and fan-outs run on worker
 * nodes only; the others enqueue them.
 */
export async function wireEvents({ config, log, stops, has }: Wiring, store: Store, metrics: Metrics): Promise<EventsArea> {
  const outbound = new OutboundPolicy(config.outbound);
  const eventsConfig = has("worker") ? config : { ...config, webhooks: { ...config.webhooks, concurrency: 0 } };
  const running = await startEvents(eventsConfig, store, log, { metrics, policy: outbound });
  stops.register("drain", "webhook deliveries", () => running.stop());
  const stopHistoryRetention = startWebhookHistoryRetention(store, config.webhookLogRetentionDays, log);
  stops.register("drain", "webhook history retention", stopHistoryRetention);
  return { outbound, events: running.events, queue: running.queue };
}
