// The one queue interface (docs/architecture.md#the-queue): jobs are enqueued durably with an idempotent id and an
// optional delay, processed with a bounded concurrency, and retried on a schedule their handler
// chooses. Two adapters implement it: embedded (the database's job table) and BullMQ (Redis).

import type { Sql } from "../db";

export type QueueKind = "embedded" | "bullmq";

export interface NewJob<T> {
  /** Idempotent: a job with this id that is waiting, running or finished recently is not added again. */
  id: string;
  data: T;
  /** Not before this many ms from now. */
  delayMs?: number;
  /**
   * Whose job it is (a user id): workers take turns between owners, so one owner's burst does
   * not hold back another's jobs. Jobs without an owner share one turn.
   */
  owner?: string;
}

export interface Job<T> {
  id: string;
  queue: string;
  data: T;
  /**
   * How many times this job has been started, this run included (1 on the first run). A run
   * whose handler gave its attempt back (`RetryLater` with `counted: false`) is not counted: the
   * next run has the same number. A run cut short by a crash is counted.
   */
  attempt: number;
}

/** Resolves: the job is done. Throws `RetryLater`: run it again then. Throws anything else: a bug
 * or a transient fault (a busy database); it is retried with a capped back-off, never dropped. */
export type JobHandler<T> = (job: Job<T>) => Promise<void>;

/**
 * Thrown by a handler to have the same job (same id and data) run again after `delayMs`. With
 * `counted: false` the run gives its attempt back (the next run has the same attempt number):
 * for runs that stopped for a reason of the server's (a shutdown, no room on its disk), not of
 * the job's.
 */
export class RetryLater extends Error {
  readonly counted: boolean;

  constructor(
    readonly delayMs: number,
    reason: string,
    options: { counted?: boolean } = {},
  ) {
    super(reason);
    this.name = "RetryLater";
    this.counted = options.counted ?? true;
  }
}

export interface ProcessOptions {
  /** Jobs of this queue running at once in this process. */
  concurrency: number;
}

/** One queue's workers in this process (what `process` started). */
export interface QueueWorker {
  /**
   * Stops taking this queue's jobs and waits for those running to finish; the queue's other
   * workers go on. `force` as for `JobQueue.close`. Idempotent.
   */
  close(options?: { force?: boolean }): Promise<void>;
}

export interface JobQueue {
  readonly kind: QueueKind;
  /**
   * Adds a job, durable once it resolves: both adapters write it to the database's job table
   * first, so with `within` (a store transaction) the job commits or rolls back with it.
   */
  enqueue<T>(queue: string, job: NewJob<T>, within?: Sql): Promise<void>;
  /** Starts running `queue`'s jobs in this process. */
  process<T>(queue: string, handler: JobHandler<T>, options: ProcessOptions): QueueWorker;
  /**
   * Names the jobs of `queue` that must exist, as their owners' records say (a pending lane
   * head, a fan-out not finished, a recording waiting for finalize). A queue that can lose jobs
   * (BullMQ: Redis restarted without persistence, flushed, or evicting) re-adds, every lease,
   * any of them it holds nowhere; the embedded queue keeps its jobs in the same database as
   * those records, so it cannot lose one and ignores this. `source` reads the database only.
   */
  expect<T>(queue: string, source: () => Promise<NewJob<T>[]>): void;
  /**
   * Stops taking jobs and waits for those running to finish. `force` does not wait: the jobs
   * running are left claimed, as a crashed process leaves them, and run again after the lease.
   */
  close(options?: { force?: boolean }): Promise<void>;
}

/** Timings; the defaults suit production, tests shorten them. */
export interface QueueTuning {
  /** How long a claimed job is reserved for its worker; after that, another may run it. */
  leaseMs: number;
  /** Longest sleep while idle: catches jobs that other processes wrote to the database. */
  pollMs: number;
  /** Back-off after an unexpected error: this, doubling per attempt, at most `maxErrorBackoffMs`. */
  errorBackoffMs: number;
  maxErrorBackoffMs: number;
  /** Finished jobs are remembered this long, so that their id is not run again. */
  keepFinishedMs: number;
}

export const DEFAULT_TUNING: QueueTuning = {
  // A running job renews its lease every third of it (BullMQ renews its lock likewise), so a
  // long job keeps it while the jobs of a worker that died come due again within 15 s.
  leaseMs: 15_000,
  pollMs: 1_000,
  errorBackoffMs: 1_000,
  maxErrorBackoffMs: 5 * 60_000,
  keepFinishedMs: 24 * 3600_000,
};

/** Delay before retrying a job whose handler failed unexpectedly (pure). */
export function errorBackoff(tuning: QueueTuning, attempt: number): number {
  return Math.min(tuning.errorBackoffMs * 2 ** Math.max(0, attempt - 1), tuning.maxErrorBackoffMs);
}
