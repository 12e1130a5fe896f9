// Segment-counter writes benchmark: `npm run bench:segments`.
//
// A live session writes its segment counters several times a second per stream, and every such
// write is fenced: one transaction that first confirms this node's lease on the stream (held
// FOR UPDATE on PostgreSQL), then adds the counters. What that costs is measured here as
// ratios of baselines timed in the same run, interleaved, on the same store:
//   (a) bare:    one `UPDATE sessions SET source_segments = source_segments + 1 WHERE id = ?`
//   (b) counters: store.sessions.addProgress, unfenced (read the session, two UPDATEs in one
//                transaction)
//   (c) fenced:  store.transaction → tx.nodes.confirm(lease) → tx.sessions.addProgress, as the
//                live session does it
// (b)/(a) is what the repository's counters cost over one statement; (c)/(b) is the fencing's.
// Each stream writes one after another; the streams of a row write at the same time.
//
// Settings (environment): BENCH_WRITES per stream per kind (default 1500), BENCH_STREAMS
// (default "1,8": one row group per count), BENCH_DATABASE_URL or DATABASE_URL (a PostgreSQL
// server: measured again on a throw-away database there, after SQLite).

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { LeaseLost, openStore, type Lease, type Store } from "../src/db";
import { fixed, formatTable, positiveIntFromEnv, throwAwayDatabase } from "./lib";

const NODE_ID = "bench-node";
/** Longer than any run: the lease must not run out while it is measured (confirm does not look at it, a take would). */
const LEASE_MS = 3_600_000;
/** Writes per stream per kind between two changes of kind: small, so that every kind sees the same moments of the machine. */
const BATCH = 25;

type Kind = "bare" | "counters" | "fenced";
const KINDS: Kind[] = ["bare", "counters", "fenced"];
const LABELS: Record<Kind, string> = {
  bare: "(a) bare UPDATE sessions",
  counters: "(b) addProgress",
  fenced: "(c) fenced addProgress",
};
/** What each kind's ratios are against. */
const AGAINST: Partial<Record<Kind, Kind>> = { counters: "bare", fenced: "counters" };

interface Live {
  lease: Lease;
  sessionId: string;
}

interface Timing {
  /** ms per write, every stream's. */
  latencies: number[];
  /** ms of wall time the kind's batches took, summed. */
  wallMs: number;
  writes: number;
}

interface Row {
  database: string;
  streams: number;
  timings: Record<Kind, Timing>;
}

function readStreamCounts(): number[] {
  const raw = process.env.BENCH_STREAMS || "1,8";
  const counts = raw.split(",").map((s) => Number(s.trim()));
  if (counts.some((n) => !Number.isInteger(n) || n <= 0 || n > 64)) throw new Error(`BENCH_STREAMS must be integers from 1 to 64, separated by commas, got "${raw}"`);
  return counts;
}

// ---------------------------------------------------------------------------------------------
// Setup

/** `n` streams of one user, each under this node's lease with a session open, as a publish leaves them. */
async function goLive(store: Store, n: number, tag: string): Promise<Live[]> {
  const user = await store.users.getOrCreate(`bench-${tag}`);
  const live: Live[] = [];
  for (let i = 0; i < n; i++) {
    const stream = await store.streams.create({ userId: user.id, name: `cam-${tag}-${i}`, profiles: [], record: false, playbackPolicy: null });
    const claim = await store.nodes.claimStream(stream.id, NODE_ID, LEASE_MS);
    if (!claim.taken) throw new Error(`could not take the lease on stream ${stream.id}: ${JSON.stringify(claim)}`);
    const lease = claim.lease;
    const session = await store.transaction(async (tx) => {
      if (!(await tx.nodes.confirm(lease))) throw new LeaseLost(lease);
      return tx.sessions.start(stream, Date.now(), NODE_ID, "rtmp");
    });
    live.push({ lease, sessionId: session.id });
  }
  return live;
}

/** One segment-counter write of `kind` for one stream. */
function writer(store: Store, kind: Kind, s: Live): () => Promise<unknown> {
  // One 2 s source segment of 500 KB: what a 2 Mb/s source adds per segment.
  const delta = { sourceSegments: 1, sourceSegmentsDuration: 2, sourceBytes: 500_000 };
  switch (kind) {
    case "bare":
      return () => store.db.run("UPDATE sessions SET source_segments = source_segments + 1 WHERE id = ?", [s.sessionId]);
    case "counters":
      return () => store.sessions.addProgress(s.sessionId, delta);
    case "fenced":
      return () =>
        store.transaction(async (tx) => {
          if (!(await tx.nodes.confirm(s.lease))) throw new LeaseLost(s.lease);
          return tx.sessions.addProgress(s.sessionId, delta);
        });
  }
}

// ---------------------------------------------------------------------------------------------
// Measurement

/** `count` writes per stream, the streams at once; each write's latency goes to `timing` unless warming up. */
async function batch(store: Store, kind: Kind, live: Live[], count: number, timing: Timing | undefined): Promise<void> {
  const started = performance.now();
  await Promise.all(
    live.map(async (s) => {
      const write = writer(store, kind, s);
      for (let i = 0; i < count; i++) {
        const t0 = performance.now();
        await write();
        timing?.latencies.push(performance.now() - t0);
      }
    }),
  );
  if (!timing) return;
  timing.wallMs += performance.now() - started;
  timing.writes += count * live.length;
}

/** BENCH_WRITES per stream per kind, in batches whose order rotates, after one warm-up batch of each. */
async function measureRow(store: Store, database: string, live: Live[], writes: number): Promise<Row> {
  const empty = (): Timing => ({ latencies: [], wallMs: 0, writes: 0 });
  const timings: Record<Kind, Timing> = { bare: empty(), counters: empty(), fenced: empty() };
  for (const kind of KINDS) await batch(store, kind, live, BATCH, undefined);
  const rounds = Math.ceil(writes / BATCH);
  for (let r = 0; r < rounds; r++) {
    const count = Math.min(BATCH, writes - r * BATCH);
    for (let k = 0; k < KINDS.length; k++) {
      const kind = KINDS[(r + k) % KINDS.length]!;
      await batch(store, kind, live, count, timings[kind]);
    }
  }
  return { database, streams: live.length, timings };
}

/** Every write counted: a write that silently did nothing would flatter its row. */
async function checkCounts(store: Store, live: Live[], writes: number): Promise<void> {
  const expected = KINDS.length * (writes + BATCH);
  for (const s of live) {
    const got = (await store.sessions.get(s.sessionId))?.sourceSegments;
    if (got !== expected) throw new Error(`session ${s.sessionId} counted ${got} segments, expected ${expected}`);
  }
}

async function measureDatabase(store: Store, database: string, streamCounts: number[], writes: number): Promise<Row[]> {
  const rows: Row[] = [];
  for (const n of streamCounts) {
    process.stderr.write(`  ${database}, ${n} stream(s): ${KINDS.length} × ${writes} writes per stream\n`);
    const live = await goLive(store, n, `${n}`);
    rows.push(await measureRow(store, database, live, writes));
    await checkCounts(store, live, writes);
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Report

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

interface Summary {
  perSecond: number;
  p50: number;
  p99: number;
}

function summarize(t: Timing): Summary {
  const sorted = [...t.latencies].sort((a, b) => a - b);
  return { perSecond: (t.writes / t.wallMs) * 1000, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
}

/** Ratios of this kind's figures to the one it is compared with: (b)/(a), (c)/(b). */
function tableRows(row: Row): string[][] {
  const s = Object.fromEntries(KINDS.map((k) => [k, summarize(row.timings[k])])) as Record<Kind, Summary>;
  return KINDS.map((kind) => {
    const m = s[kind];
    const against = AGAINST[kind];
    const base = against && s[against];
    return [
      `${row.database}, ${row.streams} stream${row.streams === 1 ? "" : "s"}: ${LABELS[kind]}`,
      fixed(m.perSecond, 0),
      fixed(m.p50, 3),
      fixed(m.p99, 3),
      against ? `(${against === "bare" ? "a" : "b"})` : "-",
      base ? fixed(m.perSecond / base.perSecond, 2) : "-",
      base ? fixed(m.p50 / base.p50, 2) : "-",
      base ? fixed(m.p99 / base.p99, 2) : "-",
    ];
  });
}

function report(rows: Row[], writes: number): string {
  const header = ["database, streams: write", "writes/s", "p50 ms", "p99 ms", "vs", "writes/s ratio", "p50 ratio", "p99 ratio"];
  return [
    "",
    "onair segment-counter writes",
    `  machine: ${os.cpus().length} cores, node ${process.version}; ${writes} writes per stream per kind, in batches of ${BATCH}, kinds interleaved`,
    "  writes/s: all the row's streams together; p50/p99: one write. Ratios: the row over the one in `vs`, (b)/(a)",
    "  and (c)/(b). Compare the ratios: absolute figures depend on the machine and what else it runs.",
    "",
    formatTable(header, rows.flatMap(tableRows)),
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------


async function main(): Promise<void> {
  const writes = positiveIntFromEnv("BENCH_WRITES", 1500);
  const streamCounts = readStreamCounts();
  const pgServer = process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-segments-"));
  process.once("SIGINT", () => {
    fs.rmSync(dir, { recursive: true, force: true });
    process.exit(130);
  });

  const rows: Row[] = [];
  process.stderr.write("running:\n");
  try {
    // Checkpoints on their own thread, as the server runs SQLite: not inside the measured commits.
    const sqlite = await openStore(path.join(dir, "onair.db"), { checkpointInBackground: () => {} });
    try {
      rows.push(...(await measureDatabase(sqlite, "SQLite", streamCounts, writes)));
    } finally {
      await sqlite.close();
    }
    if (pgServer) {
      const db = await throwAwayDatabase(pgServer, "onair_bench_segments");
      try {
        const store = await openStore({ url: db.url, name: "onair-bench-segments" });
        try {
          rows.push(...(await measureDatabase(store, "PostgreSQL", streamCounts, writes)));
        } finally {
          await store.close();
        }
      } finally {
        await db.drop();
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(report(rows, writes));
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:segments failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
