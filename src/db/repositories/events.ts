import { statementCache, type Db } from "../connection";
import { newId } from "../ids";
import type { StreamRecord } from "../types";
import { toStreamRecord } from "./streams";

/** A domain event as raised, with the JSON of its stream snapshot and payload kept verbatim. */
export interface EventRecord {
  seq: number;
  id: string;
  userId: string;
  streamId: string;
  name: string;
  createdAt: number;
  /** JSON text of the stream as it was when the event was raised (never its key). */
  streamJson: string;
  payloadJson: string;
  /**
   * Fan-out progress: the seq of the last of the owner's webhooks looked at (0: none yet), or
   * null once each webhook registered for it has its delivery.
   */
  fanoutAfter: number | null;
}

interface Row {
  seq: number;
  id: string;
  user_id: string;
  stream_id: string;
  name: string;
  created_at: number;
  stream: string;
  payload: string;
  fanout_after: number | null;
}

const toEvent = (r: Row): EventRecord => ({
  seq: r.seq,
  id: r.id,
  userId: r.user_id,
  streamId: r.stream_id,
  name: r.name,
  createdAt: r.created_at,
  streamJson: r.stream,
  payloadJson: r.payload,
  fanoutAfter: r.fanout_after,
});

export type NewEvent = Omit<EventRecord, "seq" | "id" | "fanoutAfter">;

export class EventsRepository {
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(db: Db) {
    this.sql = statementCache(db);
  }

  /** Records an event, its fan-out still to do. */
  add(e: NewEvent): EventRecord {
    const id = newId();
    const row = this
      .sql(
        `INSERT INTO events (id, user_id, stream_id, name, created_at, stream, payload, fanout_after) VALUES (?, ?, ?, ?, ?, ?, ?, 0)
         RETURNING *`,
      )
      .get(id, e.userId, e.streamId, e.name, e.createdAt, e.streamJson, e.payloadJson) as Row;
    return toEvent(row);
  }

  get(id: string): EventRecord | undefined {
    const row = this.sql("SELECT * FROM events WHERE id = ?").get(id) as Row | undefined;
    return row && toEvent(row);
  }

  /** The owner's oldest event whose fan-out is not finished: fan-outs run in the order raised. */
  oldestToFanOut(userId: string): EventRecord | undefined {
    const row = this.sql("SELECT * FROM events WHERE user_id = ? AND fanout_after IS NOT NULL ORDER BY seq LIMIT 1").get(userId) as Row | undefined;
    return row && toEvent(row);
  }

  /** Every event whose fan-out is not finished, oldest first (a bounded batch). */
  fanOutsPending(limit: number): EventRecord[] {
    return (this.sql("SELECT * FROM events WHERE fanout_after IS NOT NULL ORDER BY seq LIMIT ?").all(limit) as Row[]).map(toEvent);
  }

  /** Records fan-out progress: webhooks up to seq `after` have been looked at; null: all. */
  setFanOutProgress(id: string, after: number | null): void {
    this.sql("UPDATE events SET fanout_after = ? WHERE id = ?").run(after, id);
  }

  /**
   * The stream an event happens to, deleted or not: deleting a live stream ends its session,
   * and the `stream.idle` that follows must still reach the owner's webhooks.
   */
  streamIncludingDeleted(streamId: string): StreamRecord | undefined {
    const row = this.sql("SELECT * FROM streams WHERE id = ?").get(streamId) as Parameters<typeof toStreamRecord>[0] | undefined;
    return row && toStreamRecord(row);
  }
}
