import type { Db } from "../db";

/**
 * Jobs not yet done in the SQLite job table, by queue (leased ones included: a job being run
 * is still owed). Every queue in `queues` is listed, at 0 when empty. With REDIS_URL the table
 * is BullMQ's outbox: its jobs move to Redis within moments, so BullMQ's own counts are used.
 */
export function waitingJobsByQueue(db: Db, queues: readonly string[]): Record<string, number> {
  const depth: Record<string, number> = Object.fromEntries(queues.map((q) => [q, 0]));
  const rows = db.prepare("SELECT queue, COUNT(*) AS n FROM queue_jobs WHERE state = 'waiting' GROUP BY queue").all() as { queue: string; n: number }[];
  for (const r of rows) depth[r.queue] = r.n;
  return depth;
}
