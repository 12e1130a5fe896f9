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
});

export type NewEvent = Omit<EventRecord, "seq" | "id">;

export class EventsRepository {
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(db: Db) {
    this.sql = statementCache(db);
  }

  add(e: NewEvent): EventRecord {
    const id = newId();
    const row = this
      .sql(
        `INSERT INTO events (id, user_id, stream_id, name, created_at, stream, payload) VALUES (?, ?, ?, ?, ?, ?, ?)
         RETURNING *`,
      )
      .get(id, e.userId, e.streamId, e.name, e.createdAt, e.streamJson, e.payloadJson) as Row;
    return toEvent(row);
  }

  get(id: string): EventRecord | undefined {
    const row = this.sql("SELECT * FROM events WHERE id = ?").get(id) as Row | undefined;
    return row && toEvent(row);
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
