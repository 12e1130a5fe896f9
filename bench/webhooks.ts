// Webhook delivery benchmark: `npm run bench:webhooks`.
//
// For each queue adapter (embedded SQLite, BullMQ on Redis), events are raised through the real
// event sink into the real delivery workers, which POST them, signed, to a local receiver:
//   - burst: BENCH_EVENTS events raised at once over BENCH_STREAMS streams; delivered events/s
//     from the first raise to the last receipt (a stream's events go one at a time, in order,
//     so more streams means more parallel lanes);
//   - paced: BENCH_RATE events/s for BENCH_PACED_SECONDS; raise-to-receipt latency p50/p99, the
//     "within 100 ms" promise under a steady load;
//   - raise: what one raise() costs its caller (its transaction, until durable), in µs.
// Receiver, workers and raiser share this process and its CPU, as they do in `npm start`.
//
// Settings (environment): BENCH_EVENTS (5000), BENCH_STREAMS (50), BENCH_RATE (200),
// BENCH_PACED_SECONDS (3), REDIS_URL (redis://127.0.0.1:6379), WEBHOOK_CONCURRENCY (16).

import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { loadConfig } from "../src/config";
import { openStore, type Store } from "../src/db";
import { startEvents, type EventSink } from "../src/events";
import { createLogger } from "../src/log";
import { positiveIntFromEnv } from "./lib";

const WARMUP_EVENTS = 300;

interface Settings {
  events: number;
  streams: number;
  rate: number;
  pacedSeconds: number;
  redisUrl: string;
  concurrency: string;
}


function readSettings(): Settings {
  return {
    events: positiveIntFromEnv("BENCH_EVENTS", 5000),
    streams: positiveIntFromEnv("BENCH_STREAMS", 50),
    rate: positiveIntFromEnv("BENCH_RATE", 200),
    pacedSeconds: positiveIntFromEnv("BENCH_PACED_SECONDS", 3),
    redisUrl: process.env.REDIS_URL || "redis://127.0.0.1:6379",
    concurrency: process.env.WEBHOOK_CONCURRENCY || "16",
  };
}

// ---------------------------------------------------------------------------------------------
// The receiver: records when each event (keyed by its payload's sessionId) arrived.

interface Receiver {
  url: string;
  arrivals: Map<string, number>;
  duplicates: number;
  /** Resolves when every key in `keys` has arrived. */
  waitFor(keys: string[], timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const arrivals = new Map<string, number>();
  let duplicates = 0;
  let waiter: (() => void) | undefined;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { payload: { sessionId: string } };
      if (arrivals.has(body.payload.sessionId)) duplicates++;
      else arrivals.set(body.payload.sessionId, at);
      res.writeHead(204).end();
      waiter?.();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    get duplicates() {
      return duplicates;
    },
    waitFor: (keys, timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiter = undefined;
          const missing = keys.filter((k) => !arrivals.has(k)).length;
          reject(new Error(`${missing} of ${keys.length} events not delivered within ${timeoutMs} ms`));
        }, timeoutMs);
        waiter = () => {
          if (keys.every((k) => arrivals.has(k))) {
            clearTimeout(timer);
            waiter = undefined;
            resolve();
          }
        };
        waiter();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// One adapter's run

interface Result {
  adapter: string;
  raiseMicros: number;
  burstEvents: number;
  burstPerSecond: number;
  pacedEvents: number;
  p50: number;
  p99: number;
  max: number;
  duplicates: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function runAdapter(adapter: "embedded" | "bullmq", settings: Settings, receiver: Receiver): Promise<Result> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-webhooks-"));
  const prefix = `onair-bench-${process.pid}-${crypto.randomBytes(4).toString("hex")}`;
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: "silent",
    WEBHOOK_CONCURRENCY: settings.concurrency,
    // The receiver is this bench's own, on loopback, which the outbound policy refuses by default.
    DESTINATION_ALLOW_HOSTS: "127.0.0.1,localhost",
    ...(adapter === "bullmq" ? { REDIS_URL: settings.redisUrl, REDIS_PREFIX: prefix } : {}),
  });
  const store = await openStore(config.dbPath);
  const running = await startEvents(config, store, createLogger("silent"));
  try {
    const { events, streamIds } = await setUp(store, running.events, receiver.url, settings.streams);
    let n = 0;
    const raise = (label: string) => events.raise("stream.started", streamIds[n++ % streamIds.length]!, { sessionId: label });

    process.stderr.write(`  ${adapter}: warm-up ${WARMUP_EVENTS}, `);
    const warm = Array.from({ length: WARMUP_EVENTS }, (_, i) => `${adapter}-warm-${i}`);
    for (const k of warm) await raise(k);
    await receiver.waitFor(warm, 60_000);

    process.stderr.write(`burst ${settings.events}, `);
    const burst = Array.from({ length: settings.events }, (_, i) => `${adapter}-burst-${i}`);
    const t0 = performance.now();
    // Raised as a caller does: each recorded (durable) before the next.
    for (const k of burst) await raise(k);
    const raiseMicros = ((performance.now() - t0) * 1000) / burst.length;
    await receiver.waitFor(burst, 120_000);
    const lastArrival = Math.max(...burst.map((k) => receiver.arrivals.get(k)!));
    const burstPerSecond = burst.length / ((lastArrival - t0) / 1000);

    const pacedCount = settings.rate * settings.pacedSeconds;
    process.stderr.write(`paced ${settings.rate}/s for ${settings.pacedSeconds} s\n`);
    const raisedAt = new Map<string, number>();
    const paced = Array.from({ length: pacedCount }, (_, i) => `${adapter}-paced-${i}`);
    const start = performance.now();
    for (let i = 0; i < paced.length; i++) {
      // Open loop: each event at its own time, whether or not earlier ones have arrived.
      const due = start + (i * 1000) / settings.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      raisedAt.set(paced[i]!, performance.now());
      void raise(paced[i]!);
    }
    await receiver.waitFor(paced, 60_000);
    const latencies = paced.map((k) => receiver.arrivals.get(k)! - raisedAt.get(k)!).sort((a, b) => a - b);

    return {
      adapter,
      raiseMicros,
      burstEvents: burst.length,
      burstPerSecond,
      pacedEvents: paced.length,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies[latencies.length - 1]!,
      duplicates: receiver.duplicates,
    };
  } finally {
    await running.stop();
    await store.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (adapter === "bullmq") await deleteRedisKeys(settings.redisUrl, prefix);
  }
}

async function setUp(store: Store, events: EventSink, url: string, streams: number) {
  const userId = (await store.users.getOrCreate("bench")).id;
  await store.webhooks.create(userId, { name: "bench", url, events: ["stream.started"], sharedSecret: "bench-secret", streamId: null });
  const streamIds: string[] = [];
  for (let i = 0; i < streams; i++) streamIds.push((await store.streams.create({ userId, name: `bench-${i}`, profiles: [], record: false, playbackPolicy: null })).id);
  return { events, streamIds };
}

async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

function fixed(n: number, digits: number): string {
  return Number.isFinite(n) ? n.toFixed(digits) : "-";
}

/** Plain text with aligned columns: the first column left-aligned, numbers right-aligned. */
function formatTable(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, col) => Math.max(...all.map((row) => (row[col] ?? "").length)));
  const line = (row: string[]) =>
    row.map((cell, col) => (col === 0 ? cell.padEnd(widths[col] ?? 0) : cell.padStart(widths[col] ?? 0))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

function report(results: Result[], settings: Settings): string {
  const header = ["queue", "raise µs", "burst events", "delivered/s", "paced events", "p50 ms", "p99 ms", "max ms", "duplicates"];
  const rows = results.map((r) => [
    r.adapter,
    fixed(r.raiseMicros, 0),
    String(r.burstEvents),
    fixed(r.burstPerSecond, 0),
    String(r.pacedEvents),
    fixed(r.p50, 1),
    fixed(r.p99, 1),
    fixed(r.max, 1),
    String(r.duplicates),
  ]);
  return [
    "",
    "onair webhook delivery benchmark",
    `  machine: ${os.cpus().length} cores, node ${process.version}; ${settings.streams} streams, ` +
      `WEBHOOK_CONCURRENCY=${settings.concurrency}, signed deliveries to a local receiver`,
    "  burst: all events raised at once, delivered/s from the first raise to the last receipt;",
    `  paced: ${settings.rate} events/s for ${settings.pacedSeconds} s, latency from raise() to the receiver's read.`,
    "",
    formatTable(header, rows),
    "",
  ].join("\n");
}

async function main(): Promise<void> {
  const settings = readSettings();
  const receiver = await startReceiver();
  try {
    process.stderr.write("running:\n");
    const results: Result[] = [];
    for (const adapter of ["embedded", "bullmq"] as const) results.push(await runAdapter(adapter, settings, receiver));
    process.stdout.write(report(results, settings));
    if (results.some((r) => r.duplicates > 0)) {
      process.stdout.write("DUPLICATE DELIVERIES to a receiver that acknowledged every event: a bug.\n");
      process.exitCode = 1;
    }
  } finally {
    await receiver.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:webhooks failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
