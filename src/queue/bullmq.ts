import { DelayedError, Queue, Worker, type Job as BullJob, type JobsOptions } from "bullmq";
import { Redis } from "ioredis";
import type { Sql } from "../db";
import type { Logger } from "../log";
import { nextTurnOnce, onRing } from "./doorbell";
import { redactUrl } from "./redisUrl";
import { enqueueJob, JobTable, type JobRow } from "./jobTable";
import { OwnerTurns } from "./turns";
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

export interface BullQueueSettings {
  redisUrl: string;
  /** Namespaces every key of onair's queues in Redis. */
  prefix: string;
}

/** Retries are decided by the handler (RetryLater) or the error back-off: never run out. */
const UNLIMITED_ATTEMPTS = 1_000_000_000;
const BACKOFF_TYPE = "onair";
/** Rows relayed to Redis per round trip. */
const RELAY_BATCH = 500;
/** A command to Redis that has no answer after this fails: the relay and reconciler move on. */
const COMMAND_TIMEOUT_MS = 2_000;
/** close() returns within this, Redis or not: then connections are cut, jobs in flight run again after their lease. */
const CLOSE_BOUND_MS = 3_000;
/** Expected jobs checked per reconciler pass and source, oldest first. */
const RECONCILE_LIMIT = 20_000;

/**
 * BullMQ on Redis, for several worker processes. Jobs are first written to the database's job
 * table like the embedded queue's (so `enqueue` commits with the caller's transaction), then relayed to Redis at once and removed from the table. A crash between the
 * two relays the job again: BullMQ ignores a job id it already holds, and keeps finished jobs'
 * ids for `keepFinishedMs`.
 */
export class BullQueue implements JobQueue {
  readonly kind = "bullmq" as const;
  private readonly table: JobTable;
  private readonly queues = new Map<string, Queue>();
  private readonly workers: Worker[] = [];
  private readonly tuning: QueueTuning;
  private readonly stopListening: () => void;
  private relayTimer: NodeJS.Timeout | undefined;
  private relaying: Promise<void> | undefined;
  private relayAgain = false;
  private readonly relayNextTurn = nextTurnOnce(() => this.startRelay());
  /** Relays failed in a row: while Redis is away, retry less and less often (at most 30 s). */
  private relayFailures = 0;
  private closed = false;
  private readonly expected = new Map<string, () => Promise<NewJob<unknown>[]>>();
  private readonly turns = new OwnerTurns();
  private reconcileTimer: NodeJS.Timeout | undefined;
  private reconciling: Promise<number> | undefined;

  private constructor(
    private readonly db: Sql,
    /** The workers' connection (BullMQ duplicates it for their blocking reads). */
    private readonly connection: Redis,
    /**
     * The relay's and reconciler's: no offline queue and a command timeout, so that while Redis
     * is away an attempt fails at once and the rows wait in the outbox, instead of piling up
     * in ioredis's memory and never failing.
     */
    private readonly commands: Redis,
    /** Read by the connections' retry strategy: no reconnecting once closing. */
    private readonly state: { closing: boolean },
    private readonly settings: BullQueueSettings,
    private readonly log: Logger,
    tuning: Partial<QueueTuning>,
  ) {
    this.table = new JobTable(db);
    this.tuning = { ...DEFAULT_TUNING, ...tuning };
    this.stopListening = onRing(db, () => this.relaySoon());
    this.relaySoon();
  }

  /** Connects to Redis, failing within `connectTimeoutMs` when it cannot be reached. */
  static async open(
    db: Sql,
    log: Logger,
    settings: BullQueueSettings,
    tuning: Partial<QueueTuning> = {},
    connectTimeoutMs = 5_000,
  ): Promise<BullQueue> {
    // Reconnect while open, every 2 s at most; never once closing, so that connections to a
    // Redis that is gone (BullMQ's duplicates included: they copy these options) let go.
    const state = { closing: false };
    const retryStrategy = (attempt: number) => (state.closing ? null : Math.min(attempt * 200, 2_000));
    // BullMQ's workers block on this connection's duplicates: it requires unlimited retries.
    const connection = new Redis(settings.redisUrl, { maxRetriesPerRequest: null, lazyConnect: true, retryStrategy });
    const commands = new Redis(settings.redisUrl, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      commandTimeout: COMMAND_TIMEOUT_MS,
      lazyConnect: true,
      retryStrategy,
    });
    let lastError: unknown;
    let down = false;
    connection.on("error", (err: unknown) => {
      lastError = err;
      // Once per outage, not once per reconnect attempt.
      if (!down) log.warn({ err }, "queue: lost Redis; jobs wait in the database's outbox until it is back");
      down = true;
    });
    connection.on("ready", () => {
      if (down) log.info("queue: Redis is back");
      down = false;
    });
    commands.on("error", () => undefined); // reported above, once per outage
    try {
      await withTimeout(Promise.all([connection.connect(), commands.connect()]), connectTimeoutMs);
    } catch (err) {
      connection.disconnect();
      commands.disconnect();
      // The first connection error says more than ioredis's "Connection is closed".
      throw new Error(`cannot reach Redis at ${redactUrl(settings.redisUrl)}: ${describe(lastError ?? err)}`);
    }
    await warnUnlessNoEviction(commands, log);
    return new BullQueue(db, connection, commands, state, settings, log, tuning);
  }

  async enqueue<T>(queue: string, job: NewJob<T>, within?: Sql): Promise<void> {
    await enqueueJob(within ?? this.db, queue, job);
  }

  process<T>(queue: string, handler: JobHandler<T>, options: ProcessOptions): QueueWorker {
    if (!(options.concurrency >= 1)) throw new Error(`queue ${queue}: concurrency must be at least 1`);
    const run = async (job: BullJob, token?: string) => {
      try {
        // Runs that failed, and runs whose worker died (stalled), count; runs that gave their
        // attempt back (moved to delayed below) do not, unlike BullMQ's attemptsStarted.
        await handler({ id: job.id!, queue, data: job.data as T, attempt: job.attemptsMade + job.stalledCounter + 1 });
      } catch (err) {
        if (!(err instanceof RetryLater) || err.counted || token === undefined) throw err;
        // BullMQ's way to run a job again later without counting an attempt.
        await job.moveToDelayed(Date.now() + err.delayMs, token);
        throw new DelayedError(err.message);
      }
    };
    const worker = new Worker(
      queue,
      run,
      {
        connection: this.connection,
        prefix: this.settings.prefix,
        concurrency: options.concurrency,
        // The lease: renewed while the job runs, taken over by another worker once it lapses.
        lockDuration: this.tuning.leaseMs,
        stalledInterval: Math.max(50, Math.floor(this.tuning.leaseMs / 2)),
        // A job whose worker died is run again, however often that happens: nothing is dropped.
        maxStalledCount: UNLIMITED_ATTEMPTS,
        settings: {
          backoffStrategy: (attemptsMade: number, _type?: string, err?: Error) =>
            err instanceof RetryLater ? err.delayMs : errorBackoff(this.tuning, attemptsMade),
        },
      },
    );
    worker.on("error", (err) => this.log.error({ err, queue }, "queue: worker error"));
    worker.on("failed", (job, err) => {
      if (job && !(err instanceof RetryLater)) {
        this.log.error({ err, queue, jobId: job.id, attempt: job.attemptsStarted }, "queue: job failed unexpectedly; will retry");
      }
    });
    this.workers.push(worker);
    let closing: Promise<void> | undefined;
    return { close: (o = {}) => (closing ??= this.closeWorker(worker, queue, o.force ?? false)) };
  }

  /** A worker's close, bounded: with Redis gone, BullMQ's own close would wait for it forever. */
  private async closeWorker(worker: Worker, queue: string, force: boolean): Promise<void> {
    // With Redis away, an unforced close would wait for the worker's loop, which waits for Redis.
    const up = this.redisIsUp();
    if ((await within(worker.close(force || !up), up ? CLOSE_BOUND_MS : 0)) === "late") {
      this.log.warn({ queue, boundMs: CLOSE_BOUND_MS }, "queue: Redis did not answer while stopping a worker; its jobs in flight run again after their lease");
      void worker.disconnect().catch(() => undefined);
    }
  }

  expect<T>(queue: string, source: () => Promise<NewJob<T>[]>): void {
    this.expected.set(queue, source as () => Promise<NewJob<unknown>[]>);
    if (!this.reconcileTimer && !this.closed) {
      this.reconcileTimer = setInterval(() => {
        this.reconciling ??= this.reconcile().finally(() => (this.reconciling = undefined));
      }, this.tuning.leaseMs);
      this.reconcileTimer.unref();
    }
  }

  /**
   * Re-adds every expected job that Redis lost. The outbox is looked at before Redis: the relay
   * adds a job to Redis before deleting its row, so a job missing from both is really gone.
   * Re-added through the outbox, by the same id: a job that reappears meanwhile runs once.
   */
  async reconcile(): Promise<number> {
    let readded = 0;
    for (const [queue, source] of this.expected) {
      try {
        const jobs = (await source()).slice(0, RECONCILE_LIMIT);
        if (jobs.length === 0) continue;
        const inOutbox = await this.table.holding(jobs.map((j) => j.id));
        const candidates = jobs.filter((j) => !inOutbox.has(j.id));
        const q = this.queueFor(queue);
        for (let i = 0; i < candidates.length; i += 1000) {
          const chunk = candidates.slice(i, i + 1000);
          const pipeline = this.commands.pipeline();
          for (const j of chunk) pipeline.exists(q.toKey(j.id));
          const answers = (await pipeline.exec()) ?? [];
          for (const [k, job] of chunk.entries()) {
            const [err, exists] = answers[k] ?? [new Error("no answer"), 0];
            if (err) throw err;
            if (exists) continue;
            await enqueueJob(this.db, queue, job);
            readded++;
            this.log.warn({ queue, jobId: job.id }, "queue: Redis lost a job; added it again");
          }
        }
      } catch (err) {
        // Redis is away: the relay says so; the next pass tries again.
        this.log.debug({ err, queue }, "queue: reconciling with Redis failed; will retry");
      }
    }
    return readded;
  }

  private closing: Promise<void> | undefined;

  /** Idempotent: a second call waits for the first. Returns within a few seconds, Redis or not. */
  close(options: { force?: boolean } = {}): Promise<void> {
    return (this.closing ??= this.shutDown(options.force ?? false));
  }

  private async shutDown(force: boolean): Promise<void> {
    this.closed = true;
    this.state.closing = true;
    this.stopListening();
    clearTimeout(this.relayTimer);
    clearInterval(this.reconcileTimer);
    // With Redis known to be away there is nothing to wait for.
    if ((await within(this.shutDownGracefully(force), this.redisIsUp() ? CLOSE_BOUND_MS : 0)) === "done") return;
    // Redis does not answer: cut the connections, which fails whatever still waits on them.
    // Jobs in flight stay claimed in Redis and run again after their lease, as after a crash.
    this.log.warn({ boundMs: CLOSE_BOUND_MS }, "queue: Redis did not answer at shutdown; closing without it (jobs in flight run again after their lease)");
    this.connection.disconnect();
    this.commands.disconnect();
    for (const w of this.workers) void w.disconnect().catch(() => undefined);
  }

  private redisIsUp(): boolean {
    return this.connection.status === "ready" && this.commands.status === "ready";
  }

  private async shutDownGracefully(force: boolean): Promise<void> {
    await this.relaying;
    await this.reconciling;
    await Promise.all(this.workers.map((w) => w.close(force || !this.redisIsUp()).catch(() => undefined)));
    // Jobs that the last handlers enqueued (the next delivery of a lane) go out now rather than
    // wait in SQLite for the next start.
    if (!force) await this.relay();
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await Promise.all([this.connection, this.commands].map((c) => c.quit().catch(() => c.disconnect())));
  }

  private queueFor(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.commands, prefix: this.settings.prefix });
      q.on("error", (err) => this.log.error({ err, queue: name }, "queue: redis queue error"));
      this.queues.set(name, q);
    }
    return q;
  }

  /** Relays right after the enqueuer's transaction (delay 0), or after `delay` ms. */
  private relaySoon(delay = 0): void {
    if (this.closed) return;
    if (this.relaying) {
      // One relay at a time; a new job during it means one more round right after.
      if (delay === 0) this.relayAgain = true;
      return;
    }
    clearTimeout(this.relayTimer);
    if (delay > 0) {
      this.relayTimer = setTimeout(() => this.startRelay(), delay);
      // Waiting for the next poll must not keep a process alive on its own.
      this.relayTimer.unref();
    } else {
      this.relayNextTurn();
    }
  }

  private startRelay(): void {
    if (this.closed) return;
    if (this.relaying) {
      this.relayAgain = true;
      return;
    }
    this.relaying = this.relay().finally(() => {
      this.relaying = undefined;
      const again = this.relayAgain && this.relayFailures === 0;
      this.relayAgain = false;
      // While Redis is away, retry less and less often; otherwise poll for other processes' jobs.
      this.relaySoon(again ? 0 : Math.min(this.tuning.pollMs * 2 ** this.relayFailures, 30_000));
    });
  }

  private async relay(): Promise<void> {
    try {
      for (;;) {
        const rows = await this.table.waiting(RELAY_BATCH);
        if (rows.length === 0) break;
        await this.addToRedis(rows);
        await this.table.remove(rows.map((r) => r.seq));
        if (rows.length < RELAY_BATCH || this.closed) break;
      }
      this.relayFailures = 0;
    } catch (err) {
      // Redis is away: the rows stay in SQLite and go once it is back.
      this.relayFailures++;
      this.log.warn({ err, failures: this.relayFailures }, "queue: relaying jobs to Redis failed; will retry");
    }
  }

  private async addToRedis(rows: JobRow[]): Promise<void> {
    const now = Date.now();
    const byQueue = new Map<string, JobRow[]>();
    for (const r of rows) byQueue.set(r.queue, [...(byQueue.get(r.queue) ?? []), r]);
    const keepSeconds = Math.ceil(this.tuning.keepFinishedMs / 1000);
    await Promise.all(
      [...byQueue].map(([name, list]) =>
        this.queueFor(name).addBulk(
          list.map((r) => {
            const opts: JobsOptions = {
              jobId: r.id,
              // Turns between users (see turns.ts); the embedded queue's claim does the same.
              priority: this.turns.next(r.owner, now),
              delay: Math.max(0, r.run_at - now),
              attempts: UNLIMITED_ATTEMPTS,
              backoff: { type: BACKOFF_TYPE },
              removeOnComplete: { age: keepSeconds },
              removeOnFail: { age: keepSeconds },
            };
            return { name, data: JSON.parse(r.data) as unknown, opts };
          }),
        ),
      ),
    );
  }
}

/**
 * BullMQ keeps jobs in Redis's memory: a Redis that evicts keys under pressure drops jobs (the
 * reconciler re-adds them a lease later). Says so at start unless eviction is off; a managed
 * Redis that forbids CONFIG cannot be checked.
 */
async function warnUnlessNoEviction(redis: Redis, log: Logger): Promise<void> {
  try {
    const answer = (await redis.config("GET", "maxmemory-policy")) as string[];
    const policy = answer[1];
    if (policy && policy !== "noeviction") {
      log.warn(
        { maxmemoryPolicy: policy },
        `queue: Redis's maxmemory-policy is ${policy}: under memory pressure it may evict queued jobs (onair re-adds them, a lease late); set maxmemory-policy noeviction`,
      );
    }
  } catch (err) {
    log.debug({ err }, "queue: could not read Redis's maxmemory-policy (CONFIG is not allowed here)");
  }
}

/** "done" when `p` settles within `ms`, else "late" (and `p` is left to settle whenever). */
async function within(p: Promise<unknown>, ms: number): Promise<"done" | "late"> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), ms)));
  try {
    return await Promise.race([p.then(() => "done" as const, () => "done" as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const describe = (err: unknown) => (err instanceof Error ? err.message || err.name : String(err));
