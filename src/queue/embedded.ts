import { writeWhenStorageAllows, type Sql } from "../db";
import type { Logger } from "../log";
import { nextTurnOnce, onRing } from "./doorbell";
import { enqueueJob, JobTable, type ClaimedRow } from "./jobTable";
import {
  DEFAULT_TUNING,
  errorBackoff,
  RetryLater,
  type JobHandler,
  type JobQueue,
  type NewJob,
  type ProcessOptions,
  type QueueTuning,
  type QueueWorker,
} from "./types";

/**
 * Runs one queue's jobs from the SQLite table. It sleeps until whichever comes first: an
 * enqueue in this process (the doorbell), the next delayed job or lease coming due, or the idle
 * poll. It never spins: with every slot busy it waits for a job to finish.
 */
class TableWorker<T> {
  private active = 0;
  private readonly running = new Set<Promise<void>>();
  private readonly renewals = new Set<NodeJS.Timeout>();
  private timer: NodeJS.Timeout | undefined;
  private readonly pumpSoon = nextTurnOnce(() => void this.pump());
  private closed = false;
  /** Closed without waiting: whatever still finishes must leave its job as a crash would. */
  private forced = false;
  private lastPrune = 0;
  /** The owner the last claim ended on: the next one starts after it (turns between owners). */
  private lastOwner = "";
  private readonly stopListening: () => void;

  constructor(
    private readonly table: JobTable,
    private readonly queue: string,
    private readonly handler: JobHandler<T>,
    private readonly concurrency: number,
    private readonly tuning: QueueTuning,
    private readonly log: Logger,
  ) {
    this.stopListening = onRing(table.db, () => this.wake());
    this.wake();
  }

  /** Coalesces wake-ups; runs after the current transaction (the enqueuer's) has committed. */
  wake(): void {
    if (!this.closed) this.pumpSoon();
  }

  private pumping = false;

  private async pump(): Promise<void> {
    if (this.closed) return;
    // One pass at a time: a wake-up during a pass is caught by the pass's own re-arm.
    if (this.pumping) return this.pumpAgain();
    this.pumping = true;
    try {
      while (this.active < this.concurrency && !this.closed) {
        const { rows, lastOwner } = await this.table.claim(this.queue, Date.now(), this.tuning.leaseMs, this.concurrency - this.active, this.lastOwner);
        this.lastOwner = lastOwner;
        if (rows.length === 0) break;
        for (const row of rows) this.start(row);
      }
      await this.pruneNowAndThen();
      await this.arm();
    } catch (err) {
      // The database is busy or closing: try again at the next poll rather than give up.
      if (!this.closed) this.log.error({ err, queue: this.queue }, "queue: claiming jobs failed");
      await this.arm(this.tuning.pollMs);
    } finally {
      this.pumping = false;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    }
  }

  private again = false;

  private pumpAgain(): void {
    this.again = true;
  }

  /** Sleeps until the next job comes due, at most the idle poll. */
  private async arm(delay?: number): Promise<void> {
    clearTimeout(this.timer);
    if (this.closed) return;
    if (delay === undefined) {
      const next = this.active < this.concurrency ? await this.table.nextRunAt(this.queue) : undefined;
      if (this.closed) return;
      delay = next === undefined ? this.tuning.pollMs : Math.min(this.tuning.pollMs, Math.max(0, next - Date.now()));
    }
    this.timer = setTimeout(() => void this.pump(), delay);
    // Being idle must not keep a process alive on its own.
    this.timer.unref();
  }

  private async pruneNowAndThen(): Promise<void> {
    const now = Date.now();
    if (now - this.lastPrune < 60_000) return;
    this.lastPrune = now;
    await this.table.pruneFinished(now - this.tuning.keepFinishedMs);
  }

  private start(row: ClaimedRow): void {
    this.active++;
    const renewal = setInterval(() => {
      void this.renew(row).then((kept) => kept || clearInterval(renewal));
    }, Math.max(10, Math.floor(this.tuning.leaseMs / 3)));
    renewal.unref();
    this.renewals.add(renewal);
    const run = this.run(row).finally(() => {
      clearInterval(renewal);
      this.renewals.delete(renewal);
      this.active--;
      this.running.delete(run);
      this.wake();
    });
    this.running.add(run);
  }

  /**
   * Keeps a running job's lease. False once it is lost (no use renewing further); a renewal
   * that fails (disk full) is tried again at the next tick.
   */
  private async renew(row: ClaimedRow): Promise<boolean> {
    try {
      if (await this.table.renew(row.id, row.lease_token, Date.now() + this.tuning.leaseMs)) return true;
      this.log.warn({ queue: this.queue, jobId: row.id }, "queue: a running job's lease was lost; it may run twice");
      return false;
    } catch (err) {
      this.log.error({ err, queue: this.queue, jobId: row.id }, "queue: could not renew a running job's lease");
      return true;
    }
  }

  /** Runs the handler and records how it went; never rejects. */
  private async run(row: ClaimedRow): Promise<void> {
    const job = { id: row.id, queue: row.queue, data: JSON.parse(row.data) as T, attempt: row.attempts };
    let retry: { delayMs: number; reason: string; counted: boolean } | undefined;
    try {
      await this.handler(job);
    } catch (err) {
      if (err instanceof RetryLater) retry = { delayMs: err.delayMs, reason: err.message, counted: err.counted };
      else {
        retry = { delayMs: errorBackoff(this.tuning, row.attempts), reason: err instanceof Error ? err.message : String(err), counted: true };
        if (!this.forced) this.log.error({ err, queue: this.queue, jobId: row.id, attempt: row.attempts }, "queue: job failed unexpectedly; will retry");
      }
    }
    // Closed without waiting: leave the job claimed, as a crash would.
    if (this.forced) return;
    try {
      const outcome = retry;
      await writeWhenStorageAllows(
        () =>
          outcome
            ? this.table.retry(row.id, row.lease_token, Date.now() + outcome.delayMs, outcome.reason, outcome.counted)
            : this.table.complete(row.id, row.lease_token, Date.now()),
        { giveUp: () => this.closed },
      );
    } catch (err) {
      // Still claimed: the lease runs out and the job comes due again (a repeat, never a loss).
      this.log.error({ err, queue: this.queue, jobId: row.id }, "queue: could not record a job's outcome");
    }
  }

  private closing: Promise<void> | undefined;

  /** Idempotent; a forced close after an unforced one still leaves the running jobs claimed. */
  close(force: boolean): Promise<void> {
    if (force && !this.forced) {
      this.forced = true;
      // Forced: the jobs stay claimed, as after a crash, and come due when their leases end.
      for (const r of this.renewals) clearInterval(r);
    }
    if (!this.closing) {
      this.closed = true;
      clearTimeout(this.timer);
      this.stopListening();
      this.closing = Promise.all([...this.running]).then(() => undefined);
    }
    return force ? Promise.resolve() : this.closing;
  }
}

/** The default queue: jobs live in the service's own database (SQLite, or PostgreSQL on one node). */
export class EmbeddedQueue implements JobQueue {
  readonly kind = "embedded" as const;
  private readonly table: JobTable;
  private readonly workers: TableWorker<unknown>[] = [];
  private readonly tuning: QueueTuning;

  constructor(
    private readonly db: Sql,
    private readonly log: Logger,
    tuning: Partial<QueueTuning> = {},
  ) {
    this.table = new JobTable(db);
    this.tuning = { ...DEFAULT_TUNING, ...tuning };
  }

  async enqueue<T>(queue: string, job: NewJob<T>, within?: Sql): Promise<void> {
    await enqueueJob(within ?? this.db, queue, job);
  }

  process<T>(queue: string, handler: JobHandler<T>, options: ProcessOptions): QueueWorker {
    if (!(options.concurrency >= 1)) throw new Error(`queue ${queue}: concurrency must be at least 1`);
    const worker = new TableWorker(this.table, queue, handler as JobHandler<unknown>, options.concurrency, this.tuning, this.log);
    this.workers.push(worker);
    return { close: (o = {}) => worker.close(o.force ?? false) };
  }

  /** Jobs and the records that need them commit together here: none can go missing. */
  expect(): void {}

  private closing: Promise<void> | undefined;

  /** Idempotent: a second call waits for the first. */
  close(options: { force?: boolean } = {}): Promise<void> {
    return (this.closing ??= Promise.all(this.workers.map((w) => w.close(options.force ?? false))).then(() => undefined));
  }
}
