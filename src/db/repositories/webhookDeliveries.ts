import { statementCache, type Db } from "../connection";
import { newId } from "../ids";

/** pending: not yet settled; delivered: a 2xx came back; failed: a final error or the retry
 * window ran out; cancelled: the webhook was deleted before it could be sent. */
export type DeliveryStatus = "pending" | "delivered" | "failed" | "cancelled";

/** One event for one webhook (or one resend of it). */
export interface DeliveryRecord {
  seq: number;
  id: string;
  webhookId: string;
  eventId: string;
  streamId: string;
  status: DeliveryStatus;
  /** Retries stop about 15 minutes after this: the event's time, or the resend's. */
  windowStart: number;
  createdAt: number;
  finishedAt: number | null;
}

interface Row {
  seq: number;
  id: string;
  webhook_id: string;
  event_id: string;
  stream_id: string;
  status: DeliveryStatus;
  window_start: number;
  created_at: number;
  finished_at: number | null;
}

const toDelivery = (r: Row): DeliveryRecord => ({
  seq: r.seq,
  id: r.id,
  webhookId: r.webhook_id,
  eventId: r.event_id,
  streamId: r.stream_id,
  status: r.status,
  windowStart: r.window_start,
  createdAt: r.created_at,
  finishedAt: r.finished_at,
});

export interface NewDelivery {
  webhookId: string;
  eventId: string;
  streamId: string;
  windowStart: number;
  createdAt: number;
}

/**
 * Deliveries and their lanes. A lane is one webhook's deliveries for one stream: they are sent
 * one at a time in the order they were added, so a receiver sees a stream's events in the
 * order they happened even while an earlier one is being retried.
 */
export class WebhookDeliveriesRepository {
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(db: Db) {
    this.sql = statementCache(db);
  }

  /** Adds a pending delivery; `isLaneHead` says whether nothing else is pending before it. */
  add(d: NewDelivery): { delivery: DeliveryRecord; isLaneHead: boolean } {
    const ahead = this
      .sql("SELECT 1 FROM webhook_deliveries WHERE webhook_id = ? AND stream_id = ? AND status = 'pending' LIMIT 1")
      .get(d.webhookId, d.streamId);
    const row = this
      .sql(
        `INSERT INTO webhook_deliveries (id, webhook_id, event_id, stream_id, window_start, created_at)
         VALUES (?, ?, ?, ?, ?, ?) RETURNING *`,
      )
      .get(newId(), d.webhookId, d.eventId, d.streamId, d.windowStart, d.createdAt) as Row;
    return { delivery: toDelivery(row), isLaneHead: ahead === undefined };
  }

  /**
   * Pending deliveries at the head of their lane, oldest first, with the user whose turn their
   * job waits for: the delivery jobs that must exist.
   */
  laneHeads(limit: number): { id: string; owner: string }[] {
    return this
      .sql(
        `SELECT d.id, e.user_id AS owner FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
         WHERE d.status = 'pending' AND d.seq = (
           SELECT MIN(h.seq) FROM webhook_deliveries h WHERE h.webhook_id = d.webhook_id AND h.stream_id = d.stream_id AND h.status = 'pending')
         ORDER BY d.seq LIMIT ?`,
      )
      .all(limit) as { id: string; owner: string }[];
  }

  get(id: string): DeliveryRecord | undefined {
    const row = this.sql("SELECT * FROM webhook_deliveries WHERE id = ?").get(id) as Row | undefined;
    return row && toDelivery(row);
  }

  /**
   * Settles a pending delivery and returns the next pending one of its lane (now the head), if
   * any. Returns undefined as well when the delivery was already settled: a repeated job.
   */
  settle(id: string, status: Exclude<DeliveryStatus, "pending">, at: number): { settled: boolean; next?: DeliveryRecord } {
    const row = this
      .sql("UPDATE webhook_deliveries SET status = ?, finished_at = ? WHERE id = ? AND status = 'pending' RETURNING *")
      .get(status, at, id) as Row | undefined;
    if (!row) return { settled: false };
    const next = this
      .sql("SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND stream_id = ? AND status = 'pending' ORDER BY seq LIMIT 1")
      .get(row.webhook_id, row.stream_id) as Row | undefined;
    return { settled: true, next: next && toDelivery(next) };
  }
}
