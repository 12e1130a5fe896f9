import { dropTestDatabase, openTestStore } from "../helpers/database";
import fs from "node:fs";
import path from "node:path";
import { Writable } from "node:stream";
import { loadConfig } from "../../src/config";
import { openStore } from "../../src/db";
import { startEvents } from "../../src/events";
import { createLogger } from "../../src/log";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { startServerProcess } from "../helpers/serverProcess";
import { tempDir } from "../helpers/server";
import { startDelivery, until, type Delivery } from "../webhooks/fixture";
import { startOwnRedis, type OwnRedis } from "./ownRedis";

// Redis mode when Redis misbehaves: jobs it loses are added again from what the database says
// is owed, while it is down jobs wait in the outbox, and shutting down never waits on it.

let redis: OwnRedis | undefined;
let d: Delivery | undefined;
let rx: Receiver | undefined;

afterEach(async () => {
  await d?.stop();
  d = undefined;
  await rx?.close();
  rx = undefined;
  await redis?.stop();
  redis = undefined;
});

const env = (r: OwnRedis) => ({ REDIS_URL: r.url, REDIS_PREFIX: "onair-faults" });

it("a lane whose job Redis lost (FLUSHALL mid-retry) delivers everything, in order, after the next reconcile", async () => {
  redis = await startOwnRedis();
  let failing = true;
  rx = await startReceiver(() => (failing ? 503 : 200));
  d = await startDelivery("bullmq", env(redis), { leaseMs: 600 });
  await d.webhook(rx.url);
  const stream = await d.stream();
  for (let i = 1; i <= 3; i++) await d.events.raise("stream.started", stream.id, { sessionId: `s${i}` });
  // The lane's head is being retried (its job waits, delayed, in Redis); 2 and 3 wait behind it.
  await rx.waitFor((r) => r.length >= 2, "two failed attempts of the first event", 10_000);
  await redis.flush();
  failing = false;
  await rx.waitFor((r) => r.filter((x) => x.status === 200).length === 3, "all three delivered after the flush", 15_000);
  const delivered = rx.received.filter((x) => x.status === 200).map((x) => x.body.payload.sessionId);
  expect(delivered).toEqual(["s1", "s2", "s3"]);
  expect(rx.received.every((x) => x.status !== 200 || x.body.payload.sessionId)).toBe(true);
});

it("a fan-out whose job Redis lost before it ran is added again and fanned out", async () => {
  redis = await startOwnRedis();
  rx = await startReceiver(() => 200);
  // No workers here: the job sits in Redis until the flush takes it.
  const dir = tempDir();
  const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: "silent", ...env(redis), WEBHOOK_CONCURRENCY: "0", ALLOW_PRIVATE_DESTINATIONS: "true" });
  const store = await openTestStore(dir);
  try {
    const userId = (await store.users.getOrCreate("alice")).id;
    const stream = await store.streams.create({ userId, name: "cam", profiles: [], record: false, playbackPolicy: null });
    await store.webhooks.create(userId, { name: "h", url: rx.url, events: ["stream.started"], sharedSecret: null, streamId: null });
    const raiser = await startEvents(config, store, createLogger("silent"), { tuning: { leaseMs: 600 } });
    await raiser.events.raise("stream.started", stream.id, { sessionId: "s1" });
    await until(async () => (await store.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM queue_jobs"))!.n === 0, "the relay to Redis");
    await redis.flush();
    await raiser.stop();
    // A process with workers starts later: only the reconciler can know the fan-out is owed.
    const worker = await startEvents(loadConfig({ ...process.env, DATA_DIR: dir, LOG_LEVEL: "silent", ...env(redis), ALLOW_PRIVATE_DESTINATIONS: "true" }), store, createLogger("silent"), {
      tuning: { leaseMs: 600 },
    });
    await rx.waitFor((r) => r.length === 1, "the event delivered", 10_000);
    expect(rx.received[0]!.body.payload).toEqual({ sessionId: "s1" });
    await worker.stop();
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
    await dropTestDatabase(dir);
  }
});

it("while Redis is down jobs wait in the outbox and go once it is back; stop() with Redis gone returns promptly", async () => {
  redis = await startOwnRedis();
  rx = await startReceiver(() => 200);
  d = await startDelivery("bullmq", env(redis), { leaseMs: 600, pollMs: 100 });
  await d.webhook(rx.url);
  const stream = await d.stream();
  await d.events.raise("stream.started", stream.id, { sessionId: "before" });
  await rx.waitFor((r) => r.length === 1, "a delivery while Redis is up");

  await redis.stop();
  await d.events.raise("stream.started", stream.id, { sessionId: "during" });
  // The relay cannot send it; the row stays. (Asserting that something does not happen needs a
  // while: three relay polls.)
  await new Promise((r) => setTimeout(r, 300));
  expect((await d.store.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM queue_jobs WHERE queue = 'event-fanout'"))!.n).toBe(1);
  await redis.restart();
  await rx.waitFor((r) => r.length === 2, "the delivery raised while Redis was down", 15_000);
  expect(rx.received[1]!.body.payload.sessionId).toBe("during");

  await redis.stop();
  const t0 = performance.now();
  await d.running.stop();
  // Bounded (3 s in the adapter, plus the delivery grace), not hanging on a Redis that is gone.
  expect(performance.now() - t0).toBeLessThan(7_000);
});

it("warns at start when Redis may evict queued jobs", async () => {
  redis = await startOwnRedis(["--maxmemory-policy", "allkeys-lru"]);
  let text = "";
  const sink = new Writable({ write: (chunk, _enc, done) => ((text += chunk.toString()), done()) });
  const dir = tempDir();
  const config = loadConfig({ DATA_DIR: dir, ...env(redis) });
  const store = await openTestStore(dir);
  try {
    const running = await startEvents(config, store, createLogger("warn", sink));
    await running.stop();
    expect(text).toMatch(/maxmemory-policy is allkeys-lru.*set maxmemory-policy noeviction/);
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
    await dropTestDatabase(dir);
  }
});

it("SIGTERM with Redis down exits 0 within the shutdown deadline", async () => {
  redis = await startOwnRedis();
  const dataDir = tempDir();
  const server = await startServerProcess(dataDir, env(redis));
  try {
    await redis.stop();
    const t0 = performance.now();
    server.child.kill("SIGTERM");
    const exit = await server.exited;
    if (exit.code !== 0) throw new Error(`exited ${exit.code ?? exit.signal}; its log:\n${server.log().slice(-3000)}`);
    // The server's own deadline is 9 s; it must not be what ended it.
    expect(exit.at - t0).toBeLessThan(9_000);
    expect(server.log()).not.toMatch(/shutdown deadline/i);
  } finally {
    await server.kill();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
