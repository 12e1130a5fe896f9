import { pruneWebhookHistory, startSweeping, type Store } from "../db";
import type { Logger } from "../log";

const DAY_MS = 24 * 3600_000;

/**
 * WEBHOOK_LOG_RETENTION_DAYS: webhook attempts, settled deliveries and their events older than
 * this are deleted at start and hourly, so the database does not grow without end.
 */
export function startWebhookHistoryRetention(store: Store, retentionDays: number, log: Logger): () => void {
  if (retentionDays <= 0) return () => {};
  return startSweeping(
    "webhook history sweep",
    async () => {
      const pruned = await pruneWebhookHistory(store.db, Date.now() - retentionDays * DAY_MS);
      if (pruned.attempts + pruned.deliveries + pruned.events > 0) log.info({ ...pruned, retentionDays }, "deleted webhook history past its retention");
    },
    log,
  );
}
