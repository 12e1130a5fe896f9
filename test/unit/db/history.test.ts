import fs from "node:fs";
import { pruneWebhookHistory, type Sql } from "../../../src/db";
import { dropTestDatabase, openTestStore } from "../../helpers/database";
import { tempDir } from "../../helpers/server";

const DAY = 24 * 3600_000;

describe("webhook history retention", () => {
  it("deletes old attempts, settled deliveries and unreferenced events; keeps what is new or still owed", async () => {
    const dir = tempDir();
    const store = await openTestStore(dir);
    const now = Date.now();
    const old = now - 40 * DAY;
    const event = (id: string, at: number, q: Sql = store.db) =>
      q.run("INSERT INTO events (id, user_id, stream_id, name, created_at, stream, payload) VALUES (?, 'u', 's', 'stream.started', ?, '{}', '{}')", [id, at]);
    const delivery = (id: string, eventId: string, status: string, at: number) =>
      store.db.run("INSERT INTO webhook_deliveries (id, webhook_id, event_id, stream_id, status, window_start, created_at) VALUES (?, 'w', ?, 's', ?, ?, ?)", [
        id,
        eventId,
        status,
        at,
        at,
      ]);
    const attempt = (id: string, deliveryId: string, eventId: string, at: number, q: Sql = store.db) =>
      q.run(
        `INSERT INTO webhook_log (id, webhook_id, delivery_id, event_id, event, attempt, created_at, duration_ms, success, url, request_headers, request_body)
         VALUES (?, 'w', ?, ?, 'stream.started', 1, ?, 5, 1, 'http://x', '{}', '{}')`,
        [id, deliveryId, eventId, at],
      );
    try {
      await event("e-old", old);
      await delivery("d-old", "e-old", "delivered", old);
      await attempt("a-old", "d-old", "e-old", old);
      await event("e-owed", old);
      await delivery("d-owed", "e-owed", "pending", old);
      await event("e-new", now);
      await delivery("d-new", "e-new", "delivered", now);
      await attempt("a-new", "d-new", "e-new", now);
      // More than one batch of old attempts.
      await store.db.transaction(async (q) => {
        for (let i = 0; i < 2500; i++) await attempt(`a-bulk-${i}`, "d-old", "e-old", old, q);
      });

      expect(await pruneWebhookHistory(store.db, now - 30 * DAY)).toEqual({ attempts: 2501, deliveries: 1, events: 1 });
      const ids = async (table: string) => (await store.db.all<{ id: string }>(`SELECT id FROM ${table} ORDER BY id`)).map((r) => r.id);
      expect(await ids("webhook_log")).toEqual(["a-new"]);
      expect(await ids("webhook_deliveries")).toEqual(["d-new", "d-owed"]);
      expect(await ids("events")).toEqual(["e-new", "e-owed"]);
      expect(await pruneWebhookHistory(store.db, now - 30 * DAY)).toEqual({ attempts: 0, deliveries: 0, events: 0 });
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
      await dropTestDatabase(dir);
    }
  });
});
