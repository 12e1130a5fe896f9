import type { Sql } from "../db";

/**
 * Jobs not yet done in the database's job table, by queue (leased ones included: a job being run
 * is still owed). Every queue in `queues` is listed, at 0 when empty. With REDIS_URL the table
 * is BullMQ's outbox: its jobs move to Redis within moments, so BullMQ's own counts are used.
 */
export async function waitingJobsByQueue(db: Sql, queues: readonly string[]): Promise<Record<string, number>> {
  const depth: Record<string, number> = Object.fromEntries(queues.map((q) => [q, 0]));
  const rows = await db.all<{ queue: string; n: number }>("SELECT queue, COUNT(*) AS n FROM queue_jobs WHERE state = 'waiting' GROUP BY queue");
  for (const r of rows) depth[r.queue] = r.n;
  return depth;
}
