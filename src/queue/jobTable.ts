import crypto from "node:crypto";
import { statementCache, type Db } from "../db";
import { ring } from "./doorbell";
import type { NewJob } from "./types";

// The SQLite job table (migration 002): the embedded queue itself, and the BullMQ adapter's
// outbox. Every write is one statement, so each is atomic on its own, and claims by several
// processes cannot overlap: SQLite runs one writer at a time.

export interface JobRow {
  seq: number;
  id: string;
  queue: string;
  data: string;
  state: "waiting" | "done";
  run_at: number;
  attempts: number;
  lease_token: string | null;
  created_at: number;
  finished_at: number | null;
  last_error: string | null;
}

const caches = new WeakMap<Db, ReturnType<typeof statementCache>>();
function sqlFor(db: Db) {
  let sql = caches.get(db);
  if (!sql) caches.set(db, (sql = statementCache(db)));
  return sql;
}

/**
 * Adds a job unless one with its id exists (waiting, running, or finished and not yet pruned),
 * then wakes this process's workers. Joins the caller's transaction when there is one.
 */
export function enqueueJob<T>(db: Db, queue: string, job: NewJob<T>, now = Date.now()): void {
  sqlFor(db)("INSERT OR IGNORE INTO queue_jobs (id, queue, data, run_at, created_at) VALUES (?, ?, ?, ?, ?)").run(
    job.id,
    queue,
    JSON.stringify(job.data),
    now + Math.max(0, job.delayMs ?? 0),
    now,
  );
  ring(db);
}

export class JobTable {
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(readonly db: Db) {
    this.sql = sqlFor(db);
  }

  /**
   * Claims up to `limit` due jobs of `queue` for `leaseMs`: their run_at moves to the lease's
   * end, so if this worker dies they come due again by themselves.
   */
  claim(queue: string, now: number, leaseMs: number, limit: number): (JobRow & { lease_token: string })[] {
    const token = crypto.randomUUID();
    const rows = this
      .sql(
        `UPDATE queue_jobs SET run_at = ?, lease_token = ?, attempts = attempts + 1
         WHERE seq IN (SELECT seq FROM queue_jobs WHERE state = 'waiting' AND run_at <= ? AND queue = ? ORDER BY run_at, seq LIMIT ?)
         RETURNING *`,
      )
      .all(now + leaseMs, token, now, queue, limit) as (JobRow & { lease_token: string })[];
    return rows.sort((a, b) => a.run_at - b.run_at || a.seq - b.seq);
  }

  /** Extends a running job's lease to `until`; false when the lease was lost meanwhile. */
  renew(id: string, token: string, until: number): boolean {
    return this.sql("UPDATE queue_jobs SET run_at = ? WHERE id = ? AND lease_token = ? AND state = 'waiting'").run(until, id, token).changes === 1;
  }

  /** Marks a claimed job done; a worker whose lease was taken over changes nothing. */
  complete(id: string, token: string, now: number): boolean {
    return this.sql("UPDATE queue_jobs SET state = 'done', finished_at = ?, lease_token = NULL WHERE id = ? AND lease_token = ?").run(now, id, token)
      .changes === 1;
  }

  /**
   * Releases a claimed job to run again at `runAt`. Not `counted`: the claim's attempt is given
   * back, so the next run has the same attempt number.
   */
  retry(id: string, token: string, runAt: number, error: string, counted = true): boolean {
    return this.sql(
      "UPDATE queue_jobs SET run_at = ?, lease_token = NULL, last_error = ?, attempts = attempts - ? WHERE id = ? AND lease_token = ?",
    ).run(runAt, error.slice(0, 2000), counted ? 0 : 1, id, token).changes === 1;
  }

  /** When the next waiting job of `queue` comes due (a leased one: when its lease ends). */
  nextRunAt(queue: string): number | undefined {
    const row = this.sql("SELECT MIN(run_at) AS at FROM queue_jobs WHERE state = 'waiting' AND queue = ?").get(queue) as { at: number | null };
    return row.at ?? undefined;
  }

  /** The oldest waiting jobs of any queue, for the BullMQ adapter's relay to Redis. */
  waiting(limit: number): JobRow[] {
    return this.sql("SELECT * FROM queue_jobs WHERE state = 'waiting' ORDER BY seq LIMIT ?").all(limit) as JobRow[];
  }

  /** Forgets jobs, once Redis holds them. */
  remove(seqs: number[]): void {
    const del = this.sql("DELETE FROM queue_jobs WHERE seq = ?");
    this.db.transaction(() => {
      for (const seq of seqs) del.run(seq);
    })();
  }

  /** Forgets finished jobs older than `before`, a bounded batch at a time. */
  pruneFinished(before: number, limit = 1000): number {
    return this.sql(
      "DELETE FROM queue_jobs WHERE seq IN (SELECT seq FROM queue_jobs WHERE state = 'done' AND finished_at < ? LIMIT ?)",
    ).run(before, limit).changes;
  }

  get(id: string): JobRow | undefined {
    return this.sql("SELECT * FROM queue_jobs WHERE id = ?").get(id) as JobRow | undefined;
  }
}
