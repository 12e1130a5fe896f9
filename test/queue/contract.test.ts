import { dropTestDatabase, openTestStore } from "../helpers/database";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { openStore, type Store } from "../../src/db";
import { createLogger } from "../../src/log";
import { openQueue, RetryLater, type Job, type JobQueue, type QueueTuning } from "../../src/queue";
import { tempDir } from "../helpers/server";
import { countKeys, deleteKeys, REDIS_URL, uniquePrefix } from "./redis";

// One contract, two adapters: everything here holds for the embedded queue and for BullMQ alike.

const log = createLogger("silent");
const prefix = uniquePrefix("queue");

/** Short timings so that every case runs in well under a second. */
const FAST: Partial<QueueTuning> = { leaseMs: 1_000, pollMs: 10_000, errorBackoffMs: 20, maxErrorBackoffMs: 100 };

type Open = (store: Store, tuning?: Partial<QueueTuning>) => Promise<JobQueue>;
const adapters: [string, Open][] = [
  ["embedded", (store, tuning = FAST) => openQueue(store.db, log, { kind: "embedded" }, tuning)],
  ["bullmq", (store, tuning = FAST) => openQueue(store.db, log, { kind: "bullmq", redisUrl: REDIS_URL, prefix }, tuning)],
];

afterAll(async () => {
  await deleteKeys(prefix);
  expect(await countKeys(prefix)).toBe(0);
});

/** Resolves with the value the next time `arm` is called back, within a bound. */
function deferred<T = void>(what: string, timeoutMs = 5_000) {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
  return { promise: promise.finally(() => clearTimeout(timer)), resolve };
}

describe.each(adapters)("queue contract: %s", (kind, open) => {
  let dir: string;
  let store: Store;
  const opened: JobQueue[] = [];
  /** A queue name of its own per test: BullMQ's keys never carry one test's jobs into another. */
  let name: string;

  const queue = async (tuning?: Partial<QueueTuning>) => {
    const q = await open(store, tuning);
    opened.push(q);
    return q;
  };

  beforeEach(async () => {
    dir = tempDir();
    store = await openTestStore(dir);
    name = `t-${crypto.randomUUID()}`;
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((q) => q.close({ force: true })));
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("reports its kind", async () => {
    expect((await queue()).kind).toBe(kind);
  });

  it("runs an enqueued job once, with its id and data, as attempt 1, woken at once rather than at the next poll", async () => {
    const q = await queue();
    const ran: Job<{ n: number }>[] = [];
    const started = new Map<string, () => void>();
    q.process<{ n: number }>(name, async (job) => {
      ran.push(job);
      started.get(job.id)?.();
    }, { concurrency: 2 });
    const run = async (id: string, n: number) => {
      const d = deferred(id);
      started.set(id, d.resolve);
      await q.enqueue(name, { id, data: { n } });
      return d.promise;
    };
    // The first job also waits for the worker to be ready (BullMQ loads its scripts): not timed.
    await run("job-0", 0);
    const t0 = performance.now();
    await run("job-1", 42);
    // The poll is 10 s here: only the wake-up on enqueue explains a start this soon.
    expect(performance.now() - t0).toBeLessThan(500);
    expect(ran).toEqual([
      { id: "job-0", queue: name, data: { n: 0 }, attempt: 1 },
      { id: "job-1", queue: name, data: { n: 42 }, attempt: 1 },
    ]);
  });

  it("holds a delayed job back for its delay", async () => {
    const q = await queue();
    const done = deferred<number>("the delayed job");
    q.process(name, async () => done.resolve(performance.now()), { concurrency: 1 });
    const t0 = performance.now();
    await q.enqueue(name, { id: "later", data: {}, delayMs: 300 });
    // Timers may fire a millisecond or two early against a millisecond clock.
    expect((await done.promise) - t0).toBeGreaterThanOrEqual(295);
  });

  it("enqueues an id once: again while it waits, and again after it ran", async () => {
    const q = await queue();
    const ran: string[] = [];
    const sentinels = new Map<string, () => void>();
    q.process<{ v: number }>(name, async (job) => {
      ran.push(`${job.id}:${job.data.v}`);
      sentinels.get(job.id)?.();
    }, { concurrency: 1 });
    const sentinel = async (id: string) => {
      const d = deferred(id);
      sentinels.set(id, d.resolve);
      await q.enqueue(name, { id, data: { v: 0 } });
      return d.promise;
    };
    await q.enqueue(name, { id: "once", data: { v: 1 } });
    await q.enqueue(name, { id: "once", data: { v: 2 } });
    // One at a time, in order: when the sentinel has run, a duplicate would have run before it.
    await sentinel("s1");
    await q.enqueue(name, { id: "once", data: { v: 3 } });
    await sentinel("s2");
    expect(ran).toEqual(["once:1", "s1:0", "s2:0"]);
  });

  it("runs a job again after RetryLater's delay: same id and data, counted attempts, the gaps asked for", async () => {
    const q = await queue();
    const runs: { attempt: number; id: string; data: unknown; at: number }[] = [];
    const done = deferred("the fourth attempt");
    const delays = [40, 80, 160];
    q.process<{ k: string }>(name, async (job) => {
      runs.push({ attempt: job.attempt, id: job.id, data: job.data, at: performance.now() });
      const delay = delays[job.attempt - 1];
      if (delay !== undefined) throw new RetryLater(delay, "503 Service Unavailable");
      done.resolve();
    }, { concurrency: 1 });
    await q.enqueue(name, { id: "retried", data: { k: "v" } });
    await done.promise;
    expect(runs.map((r) => [r.attempt, r.id, r.data])).toEqual([1, 2, 3, 4].map((a) => [a, "retried", { k: "v" }]));
    const gaps = runs.slice(1).map((r, i) => r.at - runs[i]!.at);
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(delays[i]! - 5));
  });

  it("a RetryLater that is not counted gives the attempt back: the next run has the same number", async () => {
    const q = await queue();
    const attempts: number[] = [];
    const done = deferred("the run after the uncounted ones");
    q.process(name, async (job) => {
      attempts.push(job.attempt);
      // Twice not counted (a shutdown, no room), then once counted, then done.
      if (attempts.length <= 2) throw new RetryLater(30, "interrupted by shutdown", { counted: false });
      if (attempts.length === 3) throw new RetryLater(30, "remux failed");
      done.resolve();
    }, { concurrency: 1 });
    await q.enqueue(name, { id: "uncounted", data: {} });
    await done.promise;
    expect(attempts).toEqual([1, 1, 1, 2]);
  });

  it("closing one queue's worker stops its jobs and leaves the other queues running", async () => {
    const q = await queue();
    const other = `${name}-other`;
    const ran: string[] = [];
    const first = deferred("the first job");
    const worker = q.process(name, async (job) => {
      ran.push(job.id);
      first.resolve();
    }, { concurrency: 1 });
    const otherDone = deferred("the other queue's job");
    q.process(other, async () => otherDone.resolve(), { concurrency: 1 });
    await q.enqueue(name, { id: "before", data: {} });
    await first.promise;
    await worker.close();
    await worker.close();
    await q.enqueue(name, { id: "after", data: {} });
    await q.enqueue(other, { id: "elsewhere", data: {} });
    await otherDone.promise;
    await new Promise((r) => setTimeout(r, 200));
    expect(ran).toEqual(["before"]);
  });

  it("retries a job whose handler threw unexpectedly, with back-off, instead of dropping it", async () => {
    const q = await queue();
    const attempts: number[] = [];
    const done = deferred("the second attempt");
    q.process(name, async (job) => {
      attempts.push(job.attempt);
      if (job.attempt === 1) throw new Error("database is locked");
      done.resolve();
    }, { concurrency: 1 });
    await q.enqueue(name, { id: "flaky", data: {} });
    await done.promise;
    expect(attempts).toEqual([1, 2]);
  });

  it("runs at most `concurrency` jobs at once, and uses them", async () => {
    const q = await queue();
    let active = 0;
    let most = 0;
    let finished = 0;
    const done = deferred("12 jobs");
    q.process(name, async () => {
      most = Math.max(most, ++active);
      // Simulated work that holds the slot.
      await new Promise((r) => setTimeout(r, 20));
      active--;
      if (++finished === 12) done.resolve();
    }, { concurrency: 3 });
    for (let i = 0; i < 12; i++) await q.enqueue(name, { id: `c${i}`, data: {} });
    await done.promise;
    expect(most).toBe(3);
  });

  it("adds nothing when the transaction that enqueued rolls back", async () => {
    const q = await queue();
    const ran: string[] = [];
    const done = deferred("the committed job");
    q.process(name, async (job) => {
      ran.push(job.id);
      if (job.id === "committed") done.resolve();
    }, { concurrency: 1 });
    await expect(
      store.db.transaction(async (tx) => {
        await q.enqueue(name, { id: "rolled-back", data: {} }, tx);
        throw new Error("the state change failed");
      }),
    ).rejects.toThrow("the state change failed");
    await q.enqueue(name, { id: "committed", data: {} });
    await done.promise;
    expect(ran).toEqual(["committed"]);
  });

  it("keeps jobs across a restart: enqueued with no worker running, run by the next process", async () => {
    const first = await queue();
    await first.enqueue(name, { id: "survivor", data: { x: 1 } });
    await first.close();
    const second = await queue();
    const done = deferred<Job<unknown>>("the job after the restart");
    second.process(name, async (job) => done.resolve(job), { concurrency: 1 });
    expect(await done.promise).toMatchObject({ id: "survivor", data: { x: 1 }, attempt: 1 });
  });

  it("runs again, after the lease, a job whose worker died while running it", async () => {
    const tuning = { ...FAST, leaseMs: 300 };
    const first = await queue(tuning);
    const started = deferred("the first run");
    first.process(name, () => {
      started.resolve();
      return new Promise<void>(() => {}); // never finishes: the process "dies" with it
    }, { concurrency: 1 });
    await first.enqueue(name, { id: "orphan", data: {} });
    await started.promise;
    await first.close({ force: true });

    const second = await queue(tuning);
    const done = deferred<Job<unknown>>("the recovered job");
    const t0 = performance.now();
    second.process(name, async (job) => done.resolve(job), { concurrency: 1 });
    const job = await done.promise;
    expect(job).toMatchObject({ id: "orphan", attempt: 2 });
    // Recovered once the 300 ms lease lapsed, not at some much later sweep.
    expect(performance.now() - t0).toBeLessThan(3_000);
  });
});
