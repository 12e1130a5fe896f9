import { lockKey, type Sql } from "../sql";
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
 * Adding to a lane and settling its head must not interleave, or a delivery added while the
 * head settles would be neither the head nor next. SQLite runs one writer at a time; on
 * PostgreSQL a transaction-scoped advisory lock per lane does the same.
 */
function lockLane(q: Sql, webhookId: string, streamId: string): Promise<void> {
  return lockKey(q, `lane/${webhookId}/${streamId}`);
}

/**
 * Deliveries and their lanes. A lane is one webhook's deliveries for one stream: they are sent
 * one at a time in the order they were added, so a receiver sees a stream's events in the
 * order they happened even while an earlier one is being retried.
 */
export class WebhookDeliveriesRepository {
  constructor(private readonly q: Sql) {}

  /** Adds a pending delivery; `isLaneHead` says whether nothing else is pending before it. */
  async add(d: NewDelivery): Promise<{ delivery: DeliveryRecord; isLaneHead: boolean }> {
    return this.q.transaction(async (q) => {
      await lockLane(q, d.webhookId, d.streamId);
      const ahead = await q.get("SELECT 1 FROM webhook_deliveries WHERE webhook_id = ? AND stream_id = ? AND status = 'pending' LIMIT 1", [
        d.webhookId,
        d.streamId,
      ]);
      const row = await q.get<Row>(
        `INSERT INTO webhook_deliveries (id, webhook_id, event_id, stream_id, window_start, created_at)
         VALUES (?, ?, ?, ?, ?, ?) RETURNING *`,
        [newId(), d.webhookId, d.eventId, d.streamId, d.windowStart, d.createdAt],
      );
      return { delivery: toDelivery(row!), isLaneHead: ahead === undefined };
    });
  }

  /**
   * Pending deliveries at the head of their lane, oldest first, with the user whose turn their
   * job waits for: the delivery jobs that must exist.
   */
  async laneHeads(limit: number): Promise<{ id: string; owner: string }[]> {
    return this.q.all<{ id: string; owner: string }>(
      `SELECT d.id, e.user_id AS owner FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
       WHERE d.status = 'pending' AND d.seq = (
         SELECT MIN(h.seq) FROM webhook_deliveries h WHERE h.webhook_id = d.webhook_id AND h.stream_id = d.stream_id AND h.status = 'pending')
       ORDER BY d.seq LIMIT ?`,
      [limit],
    );
  }

  async get(id: string): Promise<DeliveryRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM webhook_deliveries WHERE id = ?", [id]);
    return row && toDelivery(row);
  }

  /**
   * Settles a pending delivery and returns the next pending one of its lane (now the head), if
   * any. Returns undefined as well when the delivery was already settled: a repeated job.
   */
  async settle(id: string, status: Exclude<DeliveryStatus, "pending">, at: number): Promise<{ settled: boolean; next?: DeliveryRecord }> {
    return this.q.transaction(async (q) => {
      const lane = await q.get<{ webhook_id: string; stream_id: string }>("SELECT webhook_id, stream_id FROM webhook_deliveries WHERE id = ?", [id]);
      if (!lane) return { settled: false };
      await lockLane(q, lane.webhook_id, lane.stream_id);
      const row = await q.get<Row>("UPDATE webhook_deliveries SET status = ?, finished_at = ? WHERE id = ? AND status = 'pending' RETURNING *", [status, at, id]);
      if (!row) return { settled: false };
      const next = await q.get<Row>("SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND stream_id = ? AND status = 'pending' ORDER BY seq LIMIT 1", [
        row.webhook_id,
        row.stream_id,
      ]);
      return { settled: true, next: next && toDelivery(next) };
    });
  }
}
