// Event fan-out benchmark: `npm run bench:fanout`.
//
// One event raised for a user with BENCH_WEBHOOKS webhooks (20,000), on the embedded queue.
// What it costs everyone else is the longest the event loop is blocked (RTMP, HLS and the API
// share that loop), read from perf_hooks' event-loop delay histogram at 1 ms resolution:
//   - baseline: the same deliveries written in the one transaction that raised the event, with
//     SQLite's checkpoints inside commits (how onair fanned out before), measured in this run;
//   - onair: raise() (one event row, one fan-out job), then the fan-out job's batches (with
//     checkpoints on their own thread, as the server runs them) on a queue running fan-outs
//     only; then, apart, the delivery workers POSTing every delivery to a local receiver (a
//     process of its own), WEBHOOK_CONCURRENCY at a time.
// Settings (environment): BENCH_WEBHOOKS (20000), WEBHOOK_CONCURRENCY (16).

import fs from "node:fs";
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { loadConfig } from "../src/config";
import { openStore, type Store } from "../src/db";
import { createEventSink, startEvents } from "../src/events";
import { createLogger } from "../src/log";
import { EmbeddedQueue } from "../src/queue/embedded";
import { addDelivery, EVENT_FANOUT_QUEUE, fanOutHandler, type FanOutJob } from "../src/webhooks";
import { positiveIntFromEnv } from "./lib";

const WEBHOOKS = positiveIntFromEnv("BENCH_WEBHOOKS", 20_000);
const CONCURRENCY = process.env.WEBHOOK_CONCURRENCY || "16";

async function freshStore(label: string, backgroundCheckpoints: boolean): Promise<{ store: Store; dir: string; userId: string; streamId: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `onair-bench-fanout-${label}-`));
  // onair's server checkpoints from a thread; before, commits on the loop did.
  const store = await openStore(path.join(dir, "onair.db"), backgroundCheckpoints ? { checkpointInBackground: () => {} } : {});
  const userId = (await store.users.getOrCreate("bench")).id;
  const streamId = (await store.streams.create({ userId, name: "cam", profiles: [], record: false, playbackPolicy: null })).id;
  return { store, dir, userId, streamId };
}

async function addWebhooks(store: Store, userId: string, url: string): Promise<void> {
  await store.transaction(async (tx) => {
    for (let i = 0; i < WEBHOOKS; i++) {
      await tx.webhooks.create(userId, { name: `h${i}`, url: `${url}/${i}`, events: ["stream.started"], sharedSecret: "s", streamId: null });
    }
  });
}

/** Runs `work` while the event-loop delay histogram records; the longest block and p99, in ms. */
async function loopDelay(work: () => Promise<void> | void): Promise<{ max: number; p99: number }> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  // Let the histogram take its first sample before the work starts.
  await new Promise((r) => setTimeout(r, 5));
  await work();
  await new Promise((r) => setTimeout(r, 5));
  h.disable();
  return { max: h.max / 1e6, p99: h.percentile(99) / 1e6 };
}

async function until(done: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const RECEIVER_SOURCE = `
let received = 0;
const server = require("node:http").createServer((req, res) => { req.resume(); req.on("end", () => { received++; res.end(); }); });
server.listen(0, "127.0.0.1", () => process.send({ port: server.address().port }));
process.on("message", () => process.send({ received }));
`;

const count = async (store: Store, sql: string) => (await store.db.get<{ n: number }>(sql))!.n;

async function main(): Promise<void> {
  // The receiver runs in a process of its own: what is measured is onair's loop alone.
  const receiver = spawn(process.execPath, ["-e", RECEIVER_SOURCE], { stdio: ["ignore", "pipe", "inherit", "ipc"] });
  const port = await new Promise<number>((resolve) => receiver.once("message", (m: { port: number }) => resolve(m.port)));
  const url = `http://127.0.0.1:${port}/hook`;
  const receivedCount = () =>
    new Promise<number>((resolve) => {
      receiver.once("message", (m: { received: number }) => resolve(m.received));
      receiver.send("count");
    });

  // Baseline: every delivery in the raising transaction.
  const base = await freshStore("baseline", false);
  await addWebhooks(base.store, base.userId, url);
  const event = await base.store.events.add({ userId: base.userId, streamId: base.streamId, name: "stream.started", createdAt: Date.now(), streamJson: "{}", payloadJson: "{}" });
  const baseline = await loopDelay(() =>
    base.store.transaction(async (tx) => {
      for (const w of await tx.webhooks.pageForUser(base.userId, 0, WEBHOOKS)) {
        await addDelivery(tx, { webhookId: w.id, eventId: event.id, streamId: base.streamId, windowStart: event.createdAt, createdAt: Date.now() }, base.userId);
      }
    }),
  );
  await base.store.close();
  fs.rmSync(base.dir, { recursive: true, force: true });

  // onair: one row and one job, then the fan-out job's batches (the queue runs fan-outs only,
  // so the figure is the fan-out's own), then the delivery workers send them all.
  const run = await freshStore("onair", true);
  await addWebhooks(run.store, run.userId, url);
  const silent = createLogger("silent");
  const fanOutQueue = new EmbeddedQueue(run.store.db, silent);
  fanOutQueue.process<FanOutJob>(EVENT_FANOUT_QUEUE, fanOutHandler(run.store, silent), { concurrency: 1 });
  let raiseMs = 0;
  let fanOutMs = 0;
  let t0 = 0;
  const fanOut = await loopDelay(async () => {
    t0 = performance.now();
    await createEventSink(run.store, silent).raise("stream.started", run.streamId, { sessionId: "s1" });
    raiseMs = performance.now() - t0;
    await until(async () => (await count(run.store, "SELECT COUNT(*) AS n FROM events WHERE fanout_after IS NOT NULL")) === 0, 120_000, "the fan-out");
    fanOutMs = performance.now() - t0;
  });
  await fanOutQueue.close();
  const config = loadConfig({ DATA_DIR: run.dir, LOG_LEVEL: "silent", WEBHOOK_CONCURRENCY: CONCURRENCY, ALLOW_PRIVATE_DESTINATIONS: "true" });
  const t1 = performance.now();
  const events = await startEvents(config, run.store, silent);
  // Asked of the receiver every 100 ms (a COUNT over the deliveries would load this loop).
  let received = 0;
  const delivery = await loopDelay(async () => {
    const deadline = Date.now() + 600_000;
    while ((received = await receivedCount()) < WEBHOOKS) {
      if (Date.now() > deadline) throw new Error(`timed out: ${received} of ${WEBHOOKS} delivered`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  const deliverMs = performance.now() - t1;
  await events.stop();
  await run.store.close();
  fs.rmSync(run.dir, { recursive: true, force: true });
  receiver.kill();
  if (received !== WEBHOOKS) throw new Error(`the receiver got ${received} deliveries, not ${WEBHOOKS}`);

  const rows: [string, string, string][] = [
    ["longest event-loop block: baseline (one transaction)", `${baseline.max.toFixed(1)} ms`, "1.00"],
    ["longest block: raise + fan-out (onair)", `${fanOut.max.toFixed(1)} ms`, (fanOut.max / baseline.max).toFixed(3)],
    ["  p99 of event-loop delay", `${fanOut.p99.toFixed(1)} ms`, ""],
    ["raise() for the caller", `${raiseMs.toFixed(2)} ms`, ""],
    ["raise → all deliveries made", `${fanOutMs.toFixed(0)} ms`, ""],
    [`longest block: sending all, ${CONCURRENCY} at a time`, `${delivery.max.toFixed(1)} ms`, (delivery.max / baseline.max).toFixed(3)],
    ["  p99 of event-loop delay", `${delivery.p99.toFixed(1)} ms`, ""],
    ["sending all", `${(deliverMs / 1000).toFixed(1)} s (${Math.round(WEBHOOKS / (deliverMs / 1000))}/s)`, ""],
  ];
  console.log(`\nevent fan-out: 1 event → ${WEBHOOKS} webhooks, embedded queue, WEBHOOK_CONCURRENCY=${CONCURRENCY}, node ${process.version}\n`);
  const w0 = Math.max(...rows.map((r) => r[0].length));
  const w1 = Math.max(...rows.map((r) => r[1].length));
  console.log(`${"".padEnd(w0)}  ${"value".padStart(w1)}  × baseline`);
  for (const [a, b, c] of rows) console.log(`${a.padEnd(w0)}  ${b.padStart(w1)}  ${c}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
