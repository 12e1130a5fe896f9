import type { Sql } from "../sql";
import { newId, orderedNow } from "../ids";
import type { Page, WebhookFailure, WebhookRecord } from "../types";
import { selectPage, type PageRequest } from "./page";

interface Row {
  seq: number;
  id: string;
  user_id: string;
  name: string;
  url: string;
  events: string;
  shared_secret: string | null;
  stream_id: string | null;
  created_at: number;
  last_triggered_at: number | null;
  last_failure: string | null;
}

const toWebhook = (r: Row): WebhookRecord => ({
  seq: r.seq,
  id: r.id,
  userId: r.user_id,
  name: r.name,
  url: r.url,
  events: JSON.parse(r.events) as string[],
  sharedSecret: r.shared_secret,
  streamId: r.stream_id,
  createdAt: r.created_at,
  lastTriggeredAt: r.last_triggered_at,
  lastFailure: r.last_failure ? (JSON.parse(r.last_failure) as WebhookFailure) : null,
});

export interface WebhookFields {
  name: string;
  url: string;
  events: string[];
  sharedSecret: string | null;
  streamId: string | null;
}

export class WebhooksRepository {
  constructor(private readonly q: Sql) {}

  async create(userId: string, f: WebhookFields): Promise<WebhookRecord> {
    const id = newId();
    await this.q.run(
      `INSERT INTO webhooks (id, user_id, name, url, events, shared_secret, stream_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [id, userId, f.name, f.url, JSON.stringify(f.events), f.sharedSecret, f.streamId, orderedNow()],
    );
    return (await this.get(id))!;
  }

  async get(id: string): Promise<WebhookRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM webhooks WHERE id = ?", [id]);
    return row && toWebhook(row);
  }

  async getOwned(userId: string, id: string): Promise<WebhookRecord | undefined> {
    const w = await this.get(id);
    return w && w.userId === userId ? w : undefined;
  }

  async list(userId: string, page: PageRequest): Promise<Page<WebhookRecord>> {
    return selectPage(this.q, "webhooks", ["user_id = ?"], [userId], page, toWebhook);
  }

  /** PUT: the webhook is described whole again. */
  async replace(id: string, f: WebhookFields): Promise<void> {
    await this.q.run("UPDATE webhooks SET name = ?, url = ?, events = ?, shared_secret = ?, stream_id = ? WHERE id = ?", [
      f.name,
      f.url,
      JSON.stringify(f.events),
      f.sharedSecret,
      f.streamId,
      id,
    ]);
  }

  /** How many the user has (the per-user cap). */
  async countOwned(userId: string): Promise<number> {
    return (await this.q.get<{ n: number }>("SELECT COUNT(*) AS n FROM webhooks WHERE user_id = ?", [userId]))!.n;
  }

  async delete(id: string): Promise<void> {
    await this.q.run("DELETE FROM webhooks WHERE id = ?", [id]);
  }

  /** Whether the user has any webhook at all: what decides if an event is worth recording. */
  async anyForUser(userId: string): Promise<boolean> {
    return (await this.q.get("SELECT 1 FROM webhooks WHERE user_id = ? LIMIT 1", [userId])) !== undefined;
  }

  /** The user's webhooks after seq `afterSeq`, in seq order: a fan-out's next batch. */
  async pageForUser(userId: string, afterSeq: number, limit: number): Promise<WebhookRecord[]> {
    return (await this.q.all<Row>("SELECT * FROM webhooks WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?", [userId, afterSeq, limit])).map(toWebhook);
  }
}
