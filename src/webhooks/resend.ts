import type { DeliveryRecord, Store, WebhookLogRecord } from "../db";
import { addDelivery } from "./deliver";

/**
 * Sends a logged event again: a new delivery of the same event (same `id`, new `timestamp` and
 * signature), at the end of its lane and with a retry window of its own, as if raised now.
 * `isLaneHead` is false when it waits behind an earlier delivery of the stream still pending.
 */
export async function resendLoggedEvent(store: Store, entry: WebhookLogRecord, now = Date.now()): Promise<{ delivery: DeliveryRecord; isLaneHead: boolean }> {
  return store.transaction(async (tx) => {
    const event = await tx.events.get(entry.eventId);
    if (!event) throw new Error(`log entry ${entry.id}: event ${entry.eventId} is missing`);
    return addDelivery(tx, { webhookId: entry.webhookId, eventId: event.id, streamId: event.streamId, windowStart: now, createdAt: now }, event.userId);
  });
}
