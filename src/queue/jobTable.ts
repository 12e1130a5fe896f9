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
  owner: string;
}

/** Claimed: the row, and the token that proves the lease is this worker's. */
export type ClaimedRow = JobRow & { lease_token: string };

/**
 * Owners looked at per claim before the fair walk gives up and takes the oldest due jobs: keeps
 * a claim short when thousands of owners each have a job waiting that is not yet due.
 */
const MAX_OWNER_STEPS = 2000;

/** An owner's earliest waiting job, as the fair walk sees it. */
type OwnerHead = { seq: number; owner: string; run_at: number };

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
  sqlFor(db)("INSERT OR IGNORE INTO queue_jobs (id, queue, data, run_at, created_at, owner) VALUES (?, ?, ?, ?, ?, ?)").run(
    job.id,
    queue,
    JSON.stringify(job.data),
    now + Math.max(0, job.delayMs ?? 0),
    now,
    job.owner ?? "",
  );
  ring(db);
}

export class JobTable {
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(readonly db: Db) {
    this.sql = sqlFor(db);
  }

  /**
   * Claims up to `limit` due jobs of `queue` for `leaseMs`, taking turns between owners: one job
   * of each owner with a due job in owner order, starting after `after` (the owner the previous
   * claim ended on) and wrapping around, each owner's oldest due job first. A claimed job's
   * run_at moves to the lease's end, so if this worker dies it comes due again by itself.
   * Returns the jobs in the order claimed and the owner to start after next time.
   */
  claim(queue: string, now: number, leaseMs: number, limit: number, after = ""): { rows: ClaimedRow[]; lastOwner: string } {
    return this.db.transaction(() => {
      const rows: ClaimedRow[] = [];
      let lastOwner = after;
      // Nothing due (the common wake-up): one index seek, no walk.
      if (limit <= 0 || !this.sql("SELECT 1 FROM queue_jobs WHERE queue = ? AND state = 'waiting' AND run_at <= ? LIMIT 1").get(queue, now)) {
        return { rows, lastOwner };
      }
      const token = crypto.randomUUID();
      const take = (seq: number) =>
        this
          .sql("UPDATE queue_jobs SET run_at = ?, lease_token = ?, attempts = attempts + 1 WHERE seq = ? RETURNING *")
          .get(now + leaseMs, token, seq) as ClaimedRow;
      // The walk: each step is one seek to the next owner's oldest waiting job.
      const nextOwner = this.sql(
        "SELECT seq, owner, run_at FROM queue_jobs WHERE queue = ? AND state = 'waiting' AND owner > ? ORDER BY owner, run_at, seq LIMIT 1",
      );
      const firstOwner = this.sql(
        "SELECT seq, owner, run_at FROM queue_jobs WHERE queue = ? AND state = 'waiting' ORDER BY owner, run_at, seq LIMIT 1",
      );
      let cursor: string | undefined = after;
      let wrapped = false;
      let claimedThisPass = false;
      for (let step = 0; rows.length < limit && step < MAX_OWNER_STEPS; step++) {
        const head: OwnerHead | undefined =
          cursor === undefined ? (firstOwner.get(queue) as OwnerHead | undefined) : (nextOwner.get(queue, cursor) as OwnerHead | undefined);
        if (!head) {
          // The end of the owners: a pass that claimed nothing means nothing more is due.
          if (wrapped && !claimedThisPass) break;
          wrapped = true;
          claimedThisPass = false;
          cursor = undefined;
          continue;
        }
        cursor = head.owner;
        // The owner's earliest job is not due: none of its jobs is.
        if (head.run_at > now) continue;
        rows.push(take(head.seq));
        lastOwner = head.owner;
        claimedThisPass = true;
      }
      if (rows.length < limit) {
        // Walk cut short by many idle owners: the oldest due jobs, fairness aside, so that
        // claiming always makes progress.
        const rest = this
          .sql("SELECT seq FROM queue_jobs WHERE queue = ? AND state = 'waiting' AND run_at <= ? ORDER BY run_at, seq LIMIT ?")
          .all(queue, now, limit - rows.length) as { seq: number }[];
        for (const r of rest) rows.push(take(r.seq));
      }
      return { rows, lastOwner };
    })();
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

  /** Which of `ids` the table holds (waiting or done). */
  holding(ids: string[]): Set<string> {
    const held = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const rows = this.db.prepare(`SELECT id FROM queue_jobs WHERE id IN (${chunk.map(() => "?").join(",")})`).all(...chunk) as { id: string }[];
      for (const r of rows) held.add(r.id);
    }
    return held;
  }

  get(id: string): JobRow | undefined {
    return this.sql("SELECT * FROM queue_jobs WHERE id = ?").get(id) as JobRow | undefined;
  }
}
