import { isRetryableTransactionError, orderedNow, type Store, type StreamRecord, type TargetRef, type Tx } from "../db";
import type { Logger } from "../log";
import { presentStream, type EventName, type EventPayloads, type EventStream } from "../shapes";
import { enqueueFanOut } from "../webhooks";

/** Where domain events go: the one way the rest of onair reports what happened to a stream. */
export interface EventSink {
  /**
   * Records that `name` happened to the parent stream `streamId` now. Durable once it
   * resolves: each webhook registered for it will receive it, across restarts. Cheap (one
   * transaction); rejects only if it could not record it. Events raised by this process are
   * recorded in the order raised. `within`: recorded in that transaction, with the state change
   * it reports (committed or rolled back together).
   */
  raise<N extends EventName>(name: N, streamId: string, payload: EventPayloads[N], within?: Tx): Promise<void>;
}

/** The stream as deliveries show it: the API's stream object without its key. */
export function snapshotStream(stream: StreamRecord, targets: TargetRef[]): EventStream {
  const { streamKey: _key, ...rest } = presentStream(stream, targets);
  return rest;
}

/**
 * The event sink: records an event (docs/api.md#spec-6-events rules 2-3) as one row and one fan-out job in one SQLite
 * transaction, when its owner has any webhook. So `raise` is durable when it returns and costs
 * the same for one webhook or 20,000; the fan-out job (src/webhooks) makes the deliveries, off
 * the path that raised it, and wakes the workers at once.
 */
export function createEventSink(store: Store, log: Logger): EventSink {
  const record = async (name: EventName, streamId: string, payload: unknown, at: number, within?: Tx) => {
    const transaction = within ? <T>(work: (tx: Tx) => Promise<T>) => within.db.transaction(() => work(within)) : store.transaction;
    await transaction(async (tx) => {
      const stream = await tx.events.streamIncludingDeleted(streamId);
      if (!stream) {
        log.warn({ event: name, streamId }, "event raised for an unknown stream: no owner to tell");
        return;
      }
      if (!(await tx.webhooks.anyForUser(stream.userId))) return;
      const event = await tx.events.add({
        userId: stream.userId,
        streamId,
        name,
        createdAt: at,
        streamJson: JSON.stringify(snapshotStream(stream, await tx.streamTargets.listForStream(streamId))),
        payloadJson: JSON.stringify(payload),
      });
      await enqueueFanOut(tx.db, event);
    });
  };
  // One at a time, in the order raised: a stream's events keep their order in the table.
  let tail: Promise<unknown> = Promise.resolve();
  return {
    raise(name, streamId, payload, within) {
      const at = orderedNow();
      // In the caller's transaction: its order is the transaction's (waiting for the tail
      // could wait on a write queued behind that very transaction).
      const done = within ? record(name, streamId, payload, at, within) : tail.then(() => record(name, streamId, payload, at));
      if (!within) tail = done.catch(() => undefined);
      return done.catch((err: unknown) => {
        // Inside a transaction that PostgreSQL aborted as a deadlock's victim: the whole
        // transaction runs again (Sql.transaction), this event with it.
        if (within && isRetryableTransactionError(err)) throw err;
        // Not durable, so say so: the caller must not believe the event was recorded.
        log.error({ err, event: name, streamId }, "could not record an event");
        throw err;
      });
    },
  };
}
