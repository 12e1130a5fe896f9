import { orderedNow, type Store, type StreamRecord, type TargetRef } from "../db";
import type { Logger } from "../log";
import { presentStream, type EventName, type EventPayloads, type EventStream } from "../shapes";
import { enqueueFanOut } from "../webhooks";

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
 * The event sink: records an event (spec 6.2-6.3) as one row and one fan-out job in one SQLite
 * transaction, when its owner has any webhook. So `raise` is durable when it returns and costs
 * the same for one webhook or 20,000; the fan-out job (src/webhooks) makes the deliveries, off
 * the path that raised it, and wakes the workers at once.
 */
export function createEventSink(store: Store, log: Logger): EventSink {
  return {
    raise(name, streamId, payload) {
      const at = orderedNow();
      try {
        store.db
          .transaction(() => {
            const stream = store.events.streamIncludingDeleted(streamId);
            if (!stream) {
              log.warn({ event: name, streamId }, "event raised for an unknown stream: no owner to tell");
              return;
            }
            if (!store.webhooks.anyForUser(stream.userId)) return;
            const event = store.events.add({
              userId: stream.userId,
              streamId,
              name,
              createdAt: at,
              streamJson: JSON.stringify(snapshotStream(stream, store.streamTargets.listForStream(streamId))),
              payloadJson: JSON.stringify(payload),
            });
            enqueueFanOut(store.db, event);
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
