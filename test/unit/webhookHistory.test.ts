import fs from "node:fs";
import path from "node:path";
import { openStore, pruneWebhookHistory } from "../../src/db";
import { tempDir } from "../helpers/server";

const DAY = 24 * 3600_000;

describe("webhook history retention", () => {
  it("deletes old attempts, settled deliveries and unreferenced events; keeps what is new or still owed", () => {
    const dir = tempDir();
    const store = openStore(path.join(dir, "onair.db"));
    const now = Date.now();
    const old = now - 40 * DAY;
    const event = (id: string, at: number) =>
      store.db.prepare("INSERT INTO events (id, user_id, stream_id, name, created_at, stream, payload) VALUES (?, 'u', 's', 'stream.started', ?, '{}', '{}')").run(id, at);
    const delivery = (id: string, eventId: string, status: string, at: number) =>
      store.db
        .prepare("INSERT INTO webhook_deliveries (id, webhook_id, event_id, stream_id, status, window_start, created_at) VALUES (?, 'w', ?, 's', ?, ?, ?)")
        .run(id, eventId, status, at, at);
    const attempt = (id: string, deliveryId: string, eventId: string, at: number) =>
      store.db
        .prepare(
          `INSERT INTO webhook_log (id, webhook_id, delivery_id, event_id, event, attempt, created_at, duration_ms, success, url, request_headers, request_body)
           VALUES (?, 'w', ?, ?, 'stream.started', 1, ?, 5, 1, 'http://x', '{}', '{}')`,
        )
        .run(id, deliveryId, eventId, at);
    try {
      event("e-old", old);
      delivery("d-old", "e-old", "delivered", old);
      attempt("a-old", "d-old", "e-old", old);
      event("e-owed", old);
      delivery("d-owed", "e-owed", "pending", old);
      event("e-new", now);
      delivery("d-new", "e-new", "delivered", now);
      attempt("a-new", "d-new", "e-new", now);
      // More than one batch of old attempts.
      for (let i = 0; i < 2500; i++) attempt(`a-bulk-${i}`, "d-old", "e-old", old);

      expect(pruneWebhookHistory(store.db, now - 30 * DAY)).toEqual({ attempts: 2501, deliveries: 1, events: 1 });
      const ids = (table: string) => (store.db.prepare(`SELECT id FROM ${table} ORDER BY id`).all() as { id: string }[]).map((r) => r.id);
      expect(ids("webhook_log")).toEqual(["a-new"]);
      expect(ids("webhook_deliveries")).toEqual(["d-new", "d-owed"]);
      expect(ids("events")).toEqual(["e-new", "e-owed"]);
      expect(pruneWebhookHistory(store.db, now - 30 * DAY)).toEqual({ attempts: 0, deliveries: 0, events: 0 });
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
