import { statementCache, type Db } from "../connection";
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
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(private readonly db: Db) {
    this.sql = statementCache(db);
  }

  create(userId: string, f: WebhookFields): WebhookRecord {
    const id = newId();
    this
      .sql(
        `INSERT INTO webhooks (id, user_id, name, url, events, shared_secret, stream_id, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, userId, f.name, f.url, JSON.stringify(f.events), f.sharedSecret, f.streamId, orderedNow());
    return this.get(id)!;
  }

  get(id: string): WebhookRecord | undefined {
    const row = this.sql("SELECT * FROM webhooks WHERE id = ?").get(id) as Row | undefined;
    return row && toWebhook(row);
  }

  getOwned(userId: string, id: string): WebhookRecord | undefined {
    const w = this.get(id);
    return w && w.userId === userId ? w : undefined;
  }

  list(userId: string, page: PageRequest): Page<WebhookRecord> {
    return selectPage(this.sql, "webhooks", ["user_id = ?"], [userId], page, toWebhook);
  }

  /** PUT: the webhook is described whole again. */
  replace(id: string, f: WebhookFields): void {
    this
      .sql("UPDATE webhooks SET name = ?, url = ?, events = ?, shared_secret = ?, stream_id = ? WHERE id = ?")
      .run(f.name, f.url, JSON.stringify(f.events), f.sharedSecret, f.streamId, id);
  }

  /** How many the user has (the per-user cap). */
  countOwned(userId: string): number {
    return (this.sql("SELECT COUNT(*) AS n FROM webhooks WHERE user_id = ?").get(userId) as { n: number }).n;
  }

  delete(id: string): void {
    this.sql("DELETE FROM webhooks WHERE id = ?").run(id);
  }

  /** Spec 6.2-6.3: the owner's webhooks registered for the event, for any or that stream. */
  /** Whether the user has any webhook at all: what decides if an event is worth recording. */
  anyForUser(userId: string): boolean {
    return this.sql("SELECT 1 FROM webhooks WHERE user_id = ? LIMIT 1").get(userId) !== undefined;
  }

  /** The user's webhooks after seq `afterSeq`, in seq order: a fan-out's next batch. */
  pageForUser(userId: string, afterSeq: number, limit: number): WebhookRecord[] {
    return (this.sql("SELECT * FROM webhooks WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?").all(userId, afterSeq, limit) as Row[]).map(toWebhook);
  }
}
