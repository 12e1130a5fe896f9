import { dropTestDatabase, openTestStore } from "../helpers/database";
import fs from "node:fs";
import { loadConfig } from "../../src/config";
import { createEventSink, startEvents } from "../../src/events";
import { createLogger } from "../../src/log";
import { fanOutBatch } from "../../src/webhooks";
import { LOOPBACK_DESTINATIONS, tempDir } from "../helpers/server";
import { ADAPTERS, deleteFixtureKeys, startDelivery, until, type Delivery } from "./fixture";
import { startReceiver, type Receiver } from "../helpers/receiver";

// One event, many webhooks: raise() records one event row and one fan-out job; the job makes
// one delivery per webhook registered for it, in batches, in the order events were raised.

afterAll(deleteFixtureKeys);

const count = async (d: Delivery, sql: string) => (await d.store.db.get<{ n: number }>(sql))!.n;

describe.each(ADAPTERS)("event fan-out (%s queue)", (adapter) => {
  let d: Delivery;
  let rx: Receiver;

  beforeEach(async () => {
    d = await startDelivery(adapter);
  });
  afterEach(async () => {
    await d.stop();
    await rx?.close();
  });

  it("records one event and one job when raised, then a delivery for each webhook that wants it, and every receiver gets it once", async () => {
    rx = await startReceiver(() => 200);
    const stream = await d.stream();
    const other = await d.stream("other");
    const bob = (await d.store.users.getOrCreate("bob")).id;
    for (let i = 0; i < 450; i++) await d.webhook(`${rx.url}/all/${i}`);
    await d.webhook(`${rx.url}/idle-only`, { events: ["stream.idle"] });
    await d.webhook(`${rx.url}/other-stream`, { streamId: other.id });
    await d.webhook(`${rx.url}/scoped`, { streamId: stream.id });
    await d.webhook(`${rx.url}/bob`, {}, bob);

    await d.events.raise("stream.started", stream.id, { sessionId: "s1" });
    // As raise() returns: the event and its one fan-out job; no deliveries yet (the job, woken
    // after the commit, makes them). One read, before the worker's first turn.
    const at = (await d.store.db.get<{ e: number; dl: number }>("SELECT (SELECT COUNT(*) FROM events) AS e, (SELECT COUNT(*) FROM webhook_deliveries) AS dl"))!;
    expect(at).toEqual({ e: 1, dl: 0 });
    // A webhook made after the event does not receive it.
    await d.webhook(`${rx.url}/later`);

    await rx.waitFor((r) => r.length >= 451, "451 deliveries", 30_000);
    await until(async () => (await count(d, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'")) === 0, "all settled", 10_000);
    const base = new URL(rx.url).pathname;
    const paths = rx.received.map((r) => r.path.slice(base.length));
    expect(paths.length).toBe(451);
    expect(new Set(paths).size).toBe(451);
    expect(paths).toContain("/scoped");
    for (const not of ["/idle-only", "/other-stream", "/bob", "/later"]) expect(paths).not.toContain(not);
    expect(await count(d, "SELECT COUNT(*) AS n FROM events WHERE fanout_after IS NOT NULL")).toBe(0);
  });

  it("hands each webhook a stream's events in the order raised, across batches", async () => {
    rx = await startReceiver(() => 200);
    const stream = await d.stream();
    for (let i = 0; i < 250; i++) await d.webhook(`${rx.url}/h/${i}`);
    for (let i = 1; i <= 3; i++) await d.events.raise(i % 2 ? "stream.started" : "stream.idle", stream.id, { sessionId: `s${i}` });
    await rx.waitFor((r) => r.length === 750, "750 deliveries", 30_000);
    const byHook = new Map<string, string[]>();
    for (const r of rx.received) byHook.set(r.path, [...(byHook.get(r.path) ?? []), r.body.payload.sessionId]);
    expect(byHook.size).toBe(250);
    for (const seen of byHook.values()) expect(seen).toEqual(["s1", "s2", "s3"]);
  });
});

it("a fan-out cut short (a crash between batches) is finished once, with no webhook served twice", async () => {
  // The store and sink alone: no workers, so the batches are this test's to run.
  const dir = tempDir();
  const store = await openTestStore(dir);
  try {
    const userId = (await store.users.getOrCreate("alice")).id;
    const stream = await store.streams.create({ userId, name: "cam", profiles: [], record: false, playbackPolicy: null });
    for (let i = 0; i < 500; i++) await store.webhooks.create(userId, { name: "h", url: `http://127.0.0.1:9/h/${i}`, events: ["stream.started"], sharedSecret: null, streamId: null });
    await createEventSink(store, createLogger("silent")).raise("stream.started", stream.id, { sessionId: "s1" });
    const event = (await store.db.get<{ seq: number }>("SELECT seq FROM events"))!;
    const deliveries = async (distinct = "") => (await store.db.get<{ n: number }>(`SELECT COUNT(${distinct} webhook_id) AS n FROM webhook_deliveries`))!.n;
    // Two batches by a worker that then died, then the rest by another (time-cut batches too).
    const exact = { batch: 200, budgetMs: Infinity };
    expect((await fanOutBatch(store, userId, event.seq, exact))?.added).toBe(200);
    expect((await fanOutBatch(store, userId, event.seq, exact))?.added).toBe(200);
    expect(await deliveries()).toBe(400);
    while ((await fanOutBatch(store, userId, event.seq, { batch: 50, budgetMs: 0 }))) {}
    expect(await deliveries()).toBe(500);
    expect(await deliveries("DISTINCT")).toBe(500);
    // Each delivery is the head of its own lane: 500 delivery jobs, plus the fan-out's own.
    expect((await store.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM queue_jobs WHERE queue = 'webhook-delivery'"))!.n).toBe(500);
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
    await dropTestDatabase(dir);
  }
});

it.each(ADAPTERS)("one user's burst does not hold back another user's delivery (%s queue)", async (adapter) => {
  const d = await startDelivery(adapter, { WEBHOOK_CONCURRENCY: "2" });
  const rx = await startReceiver(() => ({ status: 200, afterMs: 10 }));
  try {
    const bob = (await d.store.users.getOrCreate("bob")).id;
    const aliceStream = await d.stream();
    const bobStream = await d.store.streams.create({ userId: bob, name: "b", profiles: [], record: false, playbackPolicy: null });
    for (let i = 0; i < 300; i++) await d.webhook(`${rx.url}/alice/${i}`);
    await d.webhook(`${rx.url}/bob`, {}, bob);
    await d.events.raise("stream.started", aliceStream.id, { sessionId: "a" });
    // Alice's fan-out is under way (300 deliveries queued before bob's event is raised).
    await rx.waitFor((r) => r.length >= 5, "alice's first deliveries", 10_000);
    await d.events.raise("stream.started", bobStream.id, { sessionId: "b" });
    await rx.waitFor((r) => r.some((x) => x.path.endsWith("/bob")), "bob's delivery", 10_000);
    const position = rx.received.findIndex((x) => x.path.endsWith("/bob"));
    // Served within a couple of turns, not after alice's remaining ~295.
    expect(position).toBeLessThan(20);
  } finally {
    await d.stop();
    await rx.close();
  }
});

it("a shutdown stops a fan-out between batches, keeps its progress, and the next start finishes it", async () => {
  const dir = tempDir();
  const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: "silent", ...LOOPBACK_DESTINATIONS });
  const rx = await startReceiver(() => 200);
  let store = await openTestStore(dir);
  try {
    const userId = (await store.users.getOrCreate("alice")).id;
    const stream = await store.streams.create({ userId, name: "cam", profiles: [], record: false, playbackPolicy: null });
    for (let i = 0; i < 4_000; i++) await store.webhooks.create(userId, { name: "h", url: `${rx.url}/${i}`, events: ["stream.started"], sharedSecret: null, streamId: null });
    let running = await startEvents(config, store, createLogger("silent"));
    await running.events.raise("stream.started", stream.id, { sessionId: "s1" });
    const made = async () => (await store.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_deliveries"))!.n;
    await until(async () => (await made()) > 0, "the first batch");
    await running.stop();
    const progress = (await store.db.get<{ fanout_after: number | null }>("SELECT fanout_after FROM events"))!;
    const madeAtStop = await made();
    expect(madeAtStop).toBeLessThan(4_000);
    expect(progress.fanout_after).not.toBeNull();
    // The interrupted run did not use up an attempt.
    expect((await store.db.get<{ attempts: number }>("SELECT attempts FROM queue_jobs WHERE queue = 'event-fanout'"))!.attempts).toBe(0);
    await store.close();

    store = await openTestStore(dir);
    running = await startEvents(config, store, createLogger("silent"));
    await rx.waitFor((r) => r.length === 4_000, "every webhook's delivery", 60_000);
    expect(new Set(rx.received.map((r) => r.path)).size).toBe(4_000);
    await running.stop();
  } finally {
    await store.close();
    await rx.close();
    fs.rmSync(dir, { recursive: true, force: true });
    await dropTestDatabase(dir);
  }
});
