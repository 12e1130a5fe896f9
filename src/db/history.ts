import type { Sql } from "./sql";

export interface PrunedHistory {
  attempts: number;
  deliveries: number;
  events: number;
}

/** Rows deleted per statement: each batch is a short write, never a long lock. */
const BATCH = 1000;

/**
 * Deletes webhook history from before `cutoff` (ms): delivery attempts (the webhook log),
 * settled deliveries, and events no delivery refers to any more. Pending deliveries, their
 * events and events not yet fanned out stay, whatever their age: nothing still owed is forgotten.
 */
export async function pruneWebhookHistory(q: Sql, cutoff: number): Promise<PrunedHistory> {
  const batches = async (text: string) => {
    let total = 0;
    for (;;) {
      const n = await q.run(text, [cutoff, BATCH]);
      total += n;
      if (n < BATCH) return total;
    }
  };
  return {
    attempts: await batches("DELETE FROM webhook_log WHERE seq IN (SELECT seq FROM webhook_log WHERE created_at < ? LIMIT ?)"),
    deliveries: await batches(
      "DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE created_at < ? AND status != 'pending' LIMIT ?)",
    ),
    events: await batches(
      `DELETE FROM events WHERE seq IN (
         SELECT e.seq FROM events e WHERE e.created_at < ? AND e.fanout_after IS NULL AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id) LIMIT ?)`,
    ),
  };
}
