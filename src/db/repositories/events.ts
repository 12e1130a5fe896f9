import type { Sql } from "../sql";
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
  constructor(private readonly q: Sql) {}

  /** Records an event, its fan-out still to do. */
  async add(e: NewEvent): Promise<EventRecord> {
    const row = await this.q.get<Row>(
      `INSERT INTO events (id, user_id, stream_id, name, created_at, stream, payload, fanout_after) VALUES (?, ?, ?, ?, ?, ?, ?, 0)
       RETURNING *`,
      [newId(), e.userId, e.streamId, e.name, e.createdAt, e.streamJson, e.payloadJson],
    );
    return toEvent(row!);
  }

  async get(id: string): Promise<EventRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM events WHERE id = ?", [id]);
    return row && toEvent(row);
  }

  /**
   * The owner's oldest event whose fan-out is not finished: fan-outs run in the order raised.
   * Inside a transaction on PostgreSQL the row stays locked until it ends, so two workers
   * cannot fan out the same batch (SQLite runs one writer at a time anyway).
   */
  async oldestToFanOut(userId: string): Promise<EventRecord | undefined> {
    const lock = this.q.dialect === "postgres" ? " FOR UPDATE" : "";
    const row = await this.q.get<Row>(`SELECT * FROM events WHERE user_id = ? AND fanout_after IS NOT NULL ORDER BY seq LIMIT 1${lock}`, [userId]);
    return row && toEvent(row);
  }

  /** Every event whose fan-out is not finished, oldest first (a bounded batch). */
  async fanOutsPending(limit: number): Promise<EventRecord[]> {
    return (await this.q.all<Row>("SELECT * FROM events WHERE fanout_after IS NOT NULL ORDER BY seq LIMIT ?", [limit])).map(toEvent);
  }

  /** Records fan-out progress: webhooks up to seq `after` have been looked at; null: all. */
  async setFanOutProgress(id: string, after: number | null): Promise<void> {
    await this.q.run("UPDATE events SET fanout_after = ? WHERE id = ?", [after, id]);
  }

  /**
   * The stream an event happens to, deleted or not: deleting a live stream ends its session,
   * and the `stream.idle` that follows must still reach the owner's webhooks.
   */
  async streamIncludingDeleted(streamId: string): Promise<StreamRecord | undefined> {
    const row = await this.q.get<Parameters<typeof toStreamRecord>[0]>("SELECT * FROM streams WHERE id = ?", [streamId]);
    return row && toStreamRecord(row);
  }
}
