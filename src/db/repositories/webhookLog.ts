import type { Sql } from "../sql";
import { newId } from "../ids";
import type { Page, WebhookFailure } from "../types";
import { selectPage, type PageRequest } from "./page";

/** One delivery attempt, as GET /webhook/{id}/log shows it. */
export interface WebhookLogRecord {
  seq: number;
  id: string;
  webhookId: string;
  deliveryId: string;
  eventId: string;
  event: string;
  /** 1 for the first try of a delivery, then 2, 3… */
  attempt: number;
  /** When the attempt started (ms). */
  createdAt: number;
  durationMs: number;
  success: boolean;
  url: string;
  requestHeaders: Record<string, string>;
  requestBody: string;
  statusCode: number | null;
  statusText: string | null;
  /** The start of the response body (capped), when there was a response. */
  responseBody: string | null;
  /** Why the attempt failed when no response says it: timeout, network error, refused address. */
  error: string | null;
}

interface Row {
  seq: number;
  id: string;
  webhook_id: string;
  delivery_id: string;
  event_id: string;
  event: string;
  attempt: number;
  created_at: number;
  duration_ms: number;
  success: number;
  url: string;
  request_headers: string;
  request_body: string;
  status_code: number | null;
  status_text: string | null;
  response_body: string | null;
  error: string | null;
}

const toLog = (r: Row): WebhookLogRecord => ({
  seq: r.seq,
  id: r.id,
  webhookId: r.webhook_id,
  deliveryId: r.delivery_id,
  eventId: r.event_id,
  event: r.event,
  attempt: r.attempt,
  createdAt: r.created_at,
  durationMs: r.duration_ms,
  success: r.success === 1,
  url: r.url,
  requestHeaders: JSON.parse(r.request_headers) as Record<string, string>,
  requestBody: r.request_body,
  statusCode: r.status_code,
  statusText: r.status_text,
  responseBody: r.response_body,
  error: r.error,
});

export type NewWebhookLog = Omit<WebhookLogRecord, "seq" | "id">;

export class WebhookLogRepository {
  constructor(private readonly q: Sql) {}

  /**
   * Logs an attempt and updates the webhook's `status` (lastTriggeredAt on every attempt,
   * lastFailure on a failed one), as the webhook object reports them.
   */
  async add(l: NewWebhookLog): Promise<WebhookLogRecord> {
    return this.q.transaction(async (q) => {
      const row = await q.get<Row>(
        `INSERT INTO webhook_log (id, webhook_id, delivery_id, event_id, event, attempt, created_at, duration_ms, success,
           url, request_headers, request_body, status_code, status_text, response_body, error)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
        [
          newId(),
          l.webhookId,
          l.deliveryId,
          l.eventId,
          l.event,
          l.attempt,
          l.createdAt,
          l.durationMs,
          l.success ? 1 : 0,
          l.url,
          JSON.stringify(l.requestHeaders),
          l.requestBody,
          l.statusCode,
          l.statusText,
          l.responseBody,
          l.error,
        ],
      );
      if (l.success) {
        await q.run("UPDATE webhooks SET last_triggered_at = ? WHERE id = ?", [l.createdAt, l.webhookId]);
      } else {
        const failure: WebhookFailure = {
          timestamp: l.createdAt,
          error: l.error ?? `${l.statusCode ?? ""} ${l.statusText ?? ""}`.trim(),
          ...(l.statusCode !== null ? { statusCode: l.statusCode } : {}),
          ...(l.responseBody ? { response: l.responseBody } : {}),
        };
        await q.run("UPDATE webhooks SET last_triggered_at = ?, last_failure = ? WHERE id = ?", [l.createdAt, JSON.stringify(failure), l.webhookId]);
      }
      return toLog(row!);
    });
  }

  /** A webhook's attempts, newest first. */
  async list(webhookId: string, page: PageRequest): Promise<Page<WebhookLogRecord>> {
    return selectPage(this.q, "webhook_log", ["webhook_id = ?"], [webhookId], page, toLog);
  }

  async get(webhookId: string, id: string): Promise<WebhookLogRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM webhook_log WHERE id = ? AND webhook_id = ?", [id, webhookId]);
    return row && toLog(row);
  }

  /** The first attempt of a delivery, once made: what a resend reports. */
  async firstForDelivery(deliveryId: string): Promise<WebhookLogRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM webhook_log WHERE delivery_id = ? ORDER BY seq LIMIT 1", [deliveryId]);
    return row && toLog(row);
  }
}
