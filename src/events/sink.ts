import type { Store, StreamRecord, TargetRef } from "../db";
import type { Logger } from "../log";
import { presentStream, type EventName, type EventPayloads, type EventStream } from "../shapes";
import { addDelivery } from "../webhooks";

/** Where domain events go: the one way the rest of onair reports what happened to a stream. */
export interface EventSink {
  /**
   * Records that `name` happened to the parent stream `streamId` now. Durable once it
   * returns: each webhook registered for it will receive it, across restarts.
   * Synchronous and cheap (one SQLite transaction); throws only if it could not record it.
   */
  raise<N extends EventName>(name: N, streamId: string, payload: EventPayloads[N]): void;
}

/** The stream as deliveries show it: the API's stream object without its key. */
export function snapshotStream(stream: StreamRecord, targets: TargetRef[]): EventStream {
  const { streamKey: _key, ...rest } = presentStream(stream, targets);
  return rest;
}

/**
 * The event sink: fans an event out to each of the owner's webhooks registered for it (spec
 * 6.2-6.3), one delivery per webhook, written with their queue jobs in one SQLite transaction.
 * So `raise` is durable when it returns, costs a few inserts, and wakes the workers at once.
 */
export function createEventSink(store: Store, log: Logger): EventSink {
  return {
    raise(name, streamId, payload) {
      const at = Date.now();
      try {
        store.db
          .transaction(() => {
            const stream = store.events.streamIncludingDeleted(streamId);
            if (!stream) {
              log.warn({ event: name, streamId }, "event raised for an unknown stream: no owner to tell");
              return;
            }
            const webhooks = store.webhooks.listForEvent(stream.userId, name, streamId);
            if (webhooks.length === 0) return;
            const event = store.events.add({
              userId: stream.userId,
              streamId,
              name,
              createdAt: at,
              streamJson: JSON.stringify(snapshotStream(stream, store.streamTargets.listForStream(streamId))),
              payloadJson: JSON.stringify(payload),
            });
            for (const w of webhooks) {
              addDelivery(store, { webhookId: w.id, eventId: event.id, streamId, windowStart: at, createdAt: at });
            }
          })
          .immediate();
      } catch (err) {
        // Not durable, so say so: the caller must not believe the event was recorded.
        log.error({ err, event: name, streamId }, "could not record an event");
        throw err;
      }
    },
  };
}
