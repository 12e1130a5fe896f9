// API throughput benchmark: `npm run bench:api`.
//
// The machines this runs on are small and noisy, so absolute req/s mean little from one run to
// the next. Every run therefore also measures a bare Express 5 handler serving a response of the
// same shape and size, and reports onair as a ratio of that baseline: the ratio is what tells us
// how much our own middleware, validation and SQLite cost, and it is comparable across runs.
//
// Settings (environment): BENCH_CONNECTIONS (default 20), BENCH_DURATION in seconds (default 10),
// BENCH_DATABASE_URL (a PostgreSQL server: the same endpoints are measured again with state on a
// throw-away database there, DATABASE_URL, beside SQLite's).

import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import express from "express";
import { loadConfig } from "../src/config";
import { createLogger } from "../src/log";
import { startServer } from "../src/server";
import { fixed, formatTable, positiveIntFromEnv, runProblems, throwAwayDatabase, type RunOutcome } from "./lib";

const WARMUP_SECONDS = 2;

interface Settings {
  connections: number;
  durationSeconds: number;
}

/** A server under load: where to send requests, and how to shut it down. */
interface Target {
  baseUrl: string;
  stop(): Promise<void>;
}

interface OnairTarget extends Target {
  apiKey: string;
  streamId: string;
}

type Kind = "GET" | "POST";

interface Scenario {
  label: string;
  kind: Kind;
  isBaseline: boolean;
  options: autocannon.Options;
}

interface Measured {
  scenario: Scenario;
  result: autocannon.Result;
}


function readSettings(): Settings {
  return {
    connections: positiveIntFromEnv("BENCH_CONNECTIONS", 20),
    durationSeconds: positiveIntFromEnv("BENCH_DURATION", 10),
  };
}

// ---------------------------------------------------------------------------------------------
// Servers

/** The real service, exactly as `npm start` builds it, on a throwaway data directory. */
async function startOnair(dataDir: string, env: Record<string, string> = {}): Promise<OnairTarget> {
  // The per-key rate limit (API_RATE_LIMIT) would answer most of this load with 429s, and the
  // per-user stream cap (MAX_STREAMS_PER_USER) the POSTs with 400s: both out of the way, to
  // measure the endpoints themselves.
  const config = loadConfig({ DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent", API_RATE_LIMIT: "0", MAX_STREAMS_PER_USER: "10000000", ...env });
  const server = await startServer(config, createLogger("silent"));
  const baseUrl = `http://127.0.0.1:${server.port}`;
  // A fresh data directory always yields a first user; without one there is nothing to measure.
  const apiKey = server.firstUser?.apiKey;
  if (apiKey === undefined) {
    await server.stop();
    throw new Error(`no first user was created in ${dataDir}; the data directory was not empty`);
  }
  const streamId = await createStream(baseUrl, apiKey);
  return { baseUrl, apiKey, streamId, stop: async () => void (await server.stop()) };
}

async function createStream(baseUrl: string, apiKey: string): Promise<string> {
  const res = await fetch(`${baseUrl}/api/stream`, {
    method: "POST",
    headers: { ...authHeaders(apiKey), "content-type": "application/json" },
    body: JSON.stringify({ name: "bench" }),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST /api/stream returned ${res.status}: ${text}`);
  const body: unknown = JSON.parse(text);
  if (typeof body !== "object" || body === null || !("id" in body) || typeof body.id !== "string") {
    throw new Error(`POST /api/stream returned no id: ${text}`);
  }
  return body.id;
}

function authHeaders(apiKey: string): Record<string, string> {
  return { authorization: `Bearer ${apiKey}` };
}

/**
 * The same shape as onair's stream JSON (about 510 bytes serialised), so that the baseline pays
 * the same serialisation and transfer cost and the ratio isolates onair's own work.
 */
function baselineStream(id: string, name: string): Record<string, unknown> {
  return {
    id,
    kind: "stream",
    name,
    userId: "d63a0e79-f24a-462f-bf01-1ebe44da5770",
    createdAt: Date.now(),
    streamKey: "qtad-peid-vvlc-9118",
    playbackId: "0a8imzmrhnhpdp6j",
    isActive: false,
    lastSeen: 0,
    record: false,
    suspended: false,
    profiles: [],
    multistream: { targets: [] },
    sourceSegments: 0,
    transcodedSegments: 0,
    sourceSegmentsDuration: 0,
    transcodedSegmentsDuration: 0,
    sourceBytes: 0,
    transcodedBytes: 0,
    ingestRate: 0,
    outgoingRate: 0,
    lastTerminatedAt: null,
  };
}

/** The floor: Express 5 with nothing but routing, JSON parsing and JSON serialisation. */
async function startBaseline(): Promise<Target> {
  const app = express();
  app.get("/x/:id", (req, res) => {
    res.json(baselineStream(req.params.id, "bench"));
  });
  app.post("/x", express.json(), (req, res) => {
    const body: unknown = req.body;
    const name = typeof body === "object" && body !== null && "name" in body ? String(body.name) : "unnamed";
    res.status(201).json(baselineStream(randomUUID(), name));
  });

  const server = http.createServer(app);
  // Same keep-alive as onair's server, so neither side reconnects more than the other.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// Load

function scenarios(onair: OnairTarget, baseline: Target, settings: Settings, onPostgres?: OnairTarget): Scenario[] {
  const json = { "content-type": "application/json" };
  const postBody = JSON.stringify({ name: "bench" });
  const common = { connections: settings.connections, duration: settings.durationSeconds };
  const pgGet: Scenario[] = onPostgres
    ? [{ label: "onair GET /api/stream/{id} (PostgreSQL)", kind: "GET", isBaseline: false, options: { ...common, url: `${onPostgres.baseUrl}/api/stream/${onPostgres.streamId}`, headers: authHeaders(onPostgres.apiKey) } }]
    : [];
  const pgPost: Scenario[] = onPostgres
    ? [
        {
          label: "onair POST /api/stream (PostgreSQL)",
          kind: "POST",
          isBaseline: false,
          options: { ...common, url: `${onPostgres.baseUrl}/api/stream`, method: "POST", headers: { ...authHeaders(onPostgres.apiKey), ...json }, body: postBody },
        },
      ]
    : [];
  // Each onair row directly follows its baseline so that both see similar machine conditions.
  return [
    {
      label: "bare GET /x/:id",
      kind: "GET",
      isBaseline: true,
      options: { ...common, url: `${baseline.baseUrl}/x/${onair.streamId}` },
    },
    {
      label: "onair GET /api/stream/{id}",
      kind: "GET",
      isBaseline: false,
      options: { ...common, url: `${onair.baseUrl}/api/stream/${onair.streamId}`, headers: authHeaders(onair.apiKey) },
    },
    ...pgGet,
    {
      label: "bare POST /x",
      kind: "POST",
      isBaseline: true,
      options: { ...common, url: `${baseline.baseUrl}/x`, method: "POST", headers: json, body: postBody },
    },
    {
      label: "onair POST /api/stream",
      kind: "POST",
      isBaseline: false,
      options: {
        ...common,
        url: `${onair.baseUrl}/api/stream`,
        method: "POST",
        headers: { ...authHeaders(onair.apiKey), ...json },
        body: postBody,
      },
    },
    ...pgPost,
  ];
}

/**
 * One autocannon run. `workers: 1` puts the load generator in its own worker thread: it still
 * shares the CPU with the server, but no longer shares the server's event loop, which would
 * otherwise delay responses by however long autocannon's own callbacks take.
 */
function fire(options: autocannon.Options): Promise<autocannon.Result> {
  return autocannon({ ...options, workers: 1 });
}

/** Warm up first (JIT, SQLite page cache, sockets), then measure; only the second run counts. */
async function measure(scenario: Scenario): Promise<Measured> {
  process.stderr.write(`  ${scenario.label}: warm-up ${WARMUP_SECONDS} s, `);
  await fire({ ...scenario.options, duration: WARMUP_SECONDS });
  process.stderr.write(`measuring ${scenario.options.duration} s\n`);
  const result = await fire(scenario.options);
  return { scenario, result };
}

// ---------------------------------------------------------------------------------------------
// Report

const problemsOf = (m: Measured) => runProblems(m.scenario.label, m.result as RunOutcome);


function tableRow(m: Measured, baselines: Map<Kind, autocannon.Result>): string[] {
  const r = m.result;
  const base = m.scenario.isBaseline ? undefined : baselines.get(m.scenario.kind);
  return [
    m.scenario.label,
    fixed(r.requests.average, 0),
    fixed(r.latency.p50, 0),
    fixed(r.latency.p99, 0),
    base ? fixed(r.requests.average / base.requests.average, 2) : "-",
    base ? fixed(r.latency.p99 / base.latency.p99, 2) : "-",
  ];
}


function report(measured: Measured[], settings: Settings): string[] {
  const baselines = new Map<Kind, autocannon.Result>();
  for (const m of measured) if (m.scenario.isBaseline) baselines.set(m.scenario.kind, m.result);

  const header = ["endpoint", "req/s (mean)", "p50 ms", "p99 ms", "req/s vs bare", "p99 vs bare"];
  const lines = [
    "",
    "onair API benchmark",
    `  machine: ${os.cpus().length} cores, node ${process.version}; ` +
      `${settings.connections} connections, ${settings.durationSeconds} s per run (+${WARMUP_SECONDS} s warm-up)`,
    "  note: server, baseline and autocannon (in a worker thread) share this process and CPU; the server",
    "  is CPU-bound, so absolute numbers are pessimistic. Compare the ratios against the bare baseline.",
    "  autocannon records latency in whole milliseconds, so small p99 ratios are coarse.",
    "",
    formatTable(
      header,
      measured.map((m) => tableRow(m, baselines)),
    ),
  ];
  const problems = measured.map(problemsOf).filter((p): p is string => p !== undefined);
  if (problems.length > 0) {
    lines.push("", "FAILED REQUESTS (these rows measured errors, not the endpoint):", ...problems.map((p) => `  ${p}`));
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const settings = readSettings();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-"));
  const removeDataDir = () => fs.rmSync(dataDir, { recursive: true, force: true });
  // Ctrl-C during a 40+ s run should not leave a database behind in the temp directory.
  process.once("SIGINT", () => {
    removeDataDir();
    process.exit(130);
  });

  const targets: Target[] = [];
  try {
    const onair = await startOnair(dataDir);
    targets.push(onair);
    const baseline = await startBaseline();
    targets.push(baseline);
    const pg = process.env.BENCH_DATABASE_URL ? await throwAwayDatabase(process.env.BENCH_DATABASE_URL, "onair_bench") : undefined;
    let onPostgres: OnairTarget | undefined;
    if (pg) {
      const pgDir = path.join(dataDir, "pg");
      onPostgres = await startOnair(pgDir, { DATABASE_URL: pg.url });
      targets.push({ baseUrl: onPostgres.baseUrl, stop: async () => (await onPostgres!.stop(), await pg.drop()) });
    }

    process.stderr.write("running:\n");
    const measured: Measured[] = [];
    for (const scenario of scenarios(onair, baseline, settings, onPostgres)) measured.push(await measure(scenario));

    process.stdout.write(report(measured, settings).join("\n") + "\n");
    // Numbers from failed requests are not a benchmark: make the failure visible to scripts too.
    if (measured.some((m) => problemsOf(m) !== undefined)) process.exitCode = 1;
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
    removeDataDir();
  }
}


main().catch((err: unknown) => {
  process.stderr.write(`bench:api failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
