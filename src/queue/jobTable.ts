import crypto from "node:crypto";
import type { Sql } from "../db";
import { ring } from "./doorbell";
import type { NewJob } from "./types";

// The job table (migration 002): the embedded queue itself, and the BullMQ adapter's outbox.
// Every write is one statement, so each is atomic on its own. Claims by several processes
// cannot overlap: a claim takes a job only while it is still due, so on PostgreSQL the second
// of two racing claims finds the row leased (its UPDATE waits for the first and re-checks).

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

/**
 * Adds a job unless one with its id exists (waiting, running, or finished and not yet pruned),
 * then wakes this process's workers. Joins the caller's transaction when there is one.
 */
export async function enqueueJob<T>(q: Sql, queue: string, job: NewJob<T>, now = Date.now()): Promise<void> {
  await q.run("INSERT INTO queue_jobs (id, queue, data, run_at, created_at, owner) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING", [
    job.id,
    queue,
    JSON.stringify(job.data),
    now + Math.max(0, job.delayMs ?? 0),
    now,
    job.owner ?? "",
  ]);
  q.afterCommit(() => ring(q.root));
}

export class JobTable {
  constructor(readonly db: Sql) {}

  /**
   * Claims up to `limit` due jobs of `queue` for `leaseMs`, taking turns between owners: one job
   * of each owner with a due job in owner order, starting after `after` (the owner the previous
   * claim ended on) and wrapping around, each owner's oldest due job first. A claimed job's
   * run_at moves to the lease's end, so if this worker dies it comes due again by itself.
   * Returns the jobs in the order claimed and the owner to start after next time.
   */
  async claim(queue: string, now: number, leaseMs: number, limit: number, after = ""): Promise<{ rows: ClaimedRow[]; lastOwner: string }> {
    return this.db.transaction(async (q) => {
      const rows: ClaimedRow[] = [];
      let lastOwner = after;
      // Nothing due (the common wake-up): one index seek, no walk.
      if (limit <= 0 || !(await q.get("SELECT 1 FROM queue_jobs WHERE queue = ? AND state = 'waiting' AND run_at <= ? LIMIT 1", [queue, now]))) {
        return { rows, lastOwner };
      }
      const token = crypto.randomUUID();
      // Only while still due: a racing claimer that got there first leaves nothing to take.
      const take = async (seq: number) => {
        const row = await q.get<ClaimedRow>(
          "UPDATE queue_jobs SET run_at = ?, lease_token = ?, attempts = attempts + 1 WHERE seq = ? AND state = 'waiting' AND run_at <= ? RETURNING *",
          [now + leaseMs, token, seq, now],
        );
        if (row) rows.push(row);
        return row !== undefined;
      };
      // The walk: each step is one seek to the next owner's oldest waiting job.
      let cursor: string | undefined = after;
      let wrapped = false;
      let claimedThisPass = false;
      for (let step = 0; rows.length < limit && step < MAX_OWNER_STEPS; step++) {
        const head: OwnerHead | undefined =
          cursor === undefined
            ? await q.get<OwnerHead>("SELECT seq, owner, run_at FROM queue_jobs WHERE queue = ? AND state = 'waiting' ORDER BY owner, run_at, seq LIMIT 1", [queue])
            : await q.get<OwnerHead>(
                "SELECT seq, owner, run_at FROM queue_jobs WHERE queue = ? AND state = 'waiting' AND owner > ? ORDER BY owner, run_at, seq LIMIT 1",
                [queue, cursor],
              );
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
        if (await take(head.seq)) {
          lastOwner = head.owner;
          claimedThisPass = true;
        }
      }
      if (rows.length < limit) {
        // Walk cut short by many idle owners: the oldest due jobs, fairness aside, so that
        // claiming always makes progress.
        const rest = await q.all<{ seq: number }>("SELECT seq FROM queue_jobs WHERE queue = ? AND state = 'waiting' AND run_at <= ? ORDER BY run_at, seq LIMIT ?", [
          queue,
          now,
          limit - rows.length,
        ]);
        for (const r of rest) await take(r.seq);
      }
      return { rows, lastOwner };
    });
  }

  /** Extends a running job's lease to `until`; false when the lease was lost meanwhile. */
  async renew(id: string, token: string, until: number): Promise<boolean> {
    return (await this.db.run("UPDATE queue_jobs SET run_at = ? WHERE id = ? AND lease_token = ? AND state = 'waiting'", [until, id, token])) === 1;
  }

  /** Marks a claimed job done; a worker whose lease was taken over changes nothing. */
  async complete(id: string, token: string, now: number): Promise<boolean> {
    return (await this.db.run("UPDATE queue_jobs SET state = 'done', finished_at = ?, lease_token = NULL WHERE id = ? AND lease_token = ?", [now, id, token])) === 1;
  }

  /**
   * Releases a claimed job to run again at `runAt`. Not `counted`: the claim's attempt is given
   * back, so the next run has the same attempt number.
   */
  async retry(id: string, token: string, runAt: number, error: string, counted = true): Promise<boolean> {
    return (
      (await this.db.run("UPDATE queue_jobs SET run_at = ?, lease_token = NULL, last_error = ?, attempts = attempts - ? WHERE id = ? AND lease_token = ?", [
        runAt,
        error.slice(0, 2000),
        counted ? 0 : 1,
        id,
        token,
      ])) === 1
    );
  }

  /** When the next waiting job of `queue` comes due (a leased one: when its lease ends). */
  async nextRunAt(queue: string): Promise<number | undefined> {
    const row = await this.db.get<{ at: number | null }>("SELECT MIN(run_at) AS at FROM queue_jobs WHERE state = 'waiting' AND queue = ?", [queue]);
    return row?.at ?? undefined;
  }

  /** The oldest waiting jobs of any queue, for the BullMQ adapter's relay to Redis. */
  async waiting(limit: number): Promise<JobRow[]> {
    return this.db.all<JobRow>("SELECT * FROM queue_jobs WHERE state = 'waiting' ORDER BY seq LIMIT ?", [limit]);
  }

  /** Forgets jobs, once Redis holds them. */
  async remove(seqs: number[]): Promise<void> {
    await this.db.transaction(async (q) => {
      for (const seq of seqs) await q.run("DELETE FROM queue_jobs WHERE seq = ?", [seq]);
    });
  }

  /** Forgets finished jobs older than `before`, a bounded batch at a time. */
  async pruneFinished(before: number, limit = 1000): Promise<number> {
    return this.db.run("DELETE FROM queue_jobs WHERE seq IN (SELECT seq FROM queue_jobs WHERE state = 'done' AND finished_at < ? LIMIT ?)", [before, limit]);
  }

  /** Which of `ids` the table holds (waiting or done). */
  async holding(ids: string[]): Promise<Set<string>> {
    const held = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const rows = await this.db.all<{ id: string }>(`SELECT id FROM queue_jobs WHERE id IN (${chunk.map(() => "?").join(",")})`, chunk);
      for (const r of rows) held.add(r.id);
    }
    return held;
  }

  async get(id: string): Promise<JobRow | undefined> {
    return this.db.get<JobRow>("SELECT * FROM queue_jobs WHERE id = ?", [id]);
  }
}
