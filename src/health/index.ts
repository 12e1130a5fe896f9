import fs from "node:fs";
import express from "express";
import type { SqlDatabase } from "../db";

export { judgeFreeSpace, MIN_FREE_BYTES, probeStorageWritable, StorageWatch, STORAGE_RESERVE_BYTES, STORAGE_WATCH_MS, type StorageWatchOptions } from "./storage";

// Liveness and readiness, as orchestrators probe them: /healthz answers while the process
// serves HTTP; /readyz says whether it can do its work (take a publish, write state).

export const READINESS_CHECKS = ["database", "storage", "ffmpeg", "rtmp"] as const;
export type ReadinessCheck = (typeof READINESS_CHECKS)[number];

/** Each check throws (or returns a message) when it fails; returns nothing when it passes. */
export type ReadinessProbes = Record<ReadinessCheck, () => string | void | Promise<string | void>>;

export interface Readiness {
  status: 200 | 503;
  body: { status: "ok" | "unavailable"; checks: Record<ReadinessCheck, string> };
}

/** Each check's result ("ok" or why it failed) → the answer (pure). */
export function judgeReadiness(results: Record<ReadinessCheck, string | undefined>): Readiness {
  const checks = Object.fromEntries(READINESS_CHECKS.map((c) => [c, results[c] ?? "ok"])) as Record<ReadinessCheck, string>;
  const ok = READINESS_CHECKS.every((c) => results[c] === undefined);
  return { status: ok ? 200 : 503, body: { status: ok ? "ok" : "unavailable", checks } };
}

/** Runs every probe; a probe that throws has failed with its message. */
export async function checkReadiness(probes: ReadinessProbes): Promise<Readiness> {
  const results = {} as Record<ReadinessCheck, string | undefined>;
  for (const c of READINESS_CHECKS) {
    try {
      results[c] = (await probes[c]()) || undefined;
    } catch (err) {
      results[c] = err instanceof Error ? err.message : String(err);
    }
  }
  return judgeReadiness(results);
}

/** The database takes a write: the write lock is taken and given back, nothing is written. */
export async function probeDatabaseWritable(store: SqlDatabase, lockWaitMs = 1000): Promise<string | void> {
  const db = store.sqlite;
  if (!db) {
    // PostgreSQL: an UPDATE that changes no row still needs a writable server and transaction.
    try {
      await withTimeout(
        store.run("UPDATE schema_migrations SET name = name WHERE version < 0"),
        lockWaitMs * 3,
      );
      return;
    } catch (err) {
      return `not writable: ${(err as Error).message}`;
    }
  }
  // A transaction of ours is open on the connection (it awaits between statements): the
  // database takes writes, and a BEGIN here would fail and its ROLLBACK undo that transaction.
  if (db.inTransaction) return;
  // Another process (cli, worker) may hold the lock for a moment: wait briefly, not the
  // connection's 5 s, as this blocks the event loop while it waits.
  const previous = db.pragma("busy_timeout", { simple: true }) as number;
  db.pragma(`busy_timeout = ${lockWaitMs}`);
  try {
    db.exec("BEGIN IMMEDIATE");
    db.exec("ROLLBACK");
  } catch (err) {
    // Only the BEGIN above can have opened a transaction here (none was open before it).
    if (db.inTransaction) db.exec("ROLLBACK");
    return `not writable: ${(err as Error).message}`;
  } finally {
    db.pragma(`busy_timeout = ${previous}`);
  }
}

/** The ffmpeg found at start is still there and executable. */
export function probeFfmpeg(ffmpegPath: string | undefined): string | void {
  if (!ffmpegPath) return "not found: install ffmpeg or set FFMPEG_PATH";
  try {
    fs.accessSync(ffmpegPath, fs.constants.X_OK);
  } catch {
    return `${ffmpegPath} is no longer executable`;
  }
}

/**
 * Readiness at most every `ttlMs`: a probe takes the database's write lock and looks at the
 * disk, which a load balancer polling every few hundred ms (or anyone, on a public port)
 * must not be able to multiply.
 */
export function cachedReadiness(probes: ReadinessProbes, ttlMs = READINESS_CACHE_MS, now: () => number = Date.now): () => Promise<Readiness> {
  let last: { at: number; readiness: Promise<Readiness> } | undefined;
  return () => {
    if (!last || now() - last.at >= ttlMs) last = { at: now(), readiness: checkReadiness(probes) };
    return last.readiness;
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** How long a readiness answer is reused. */
export const READINESS_CACHE_MS = 1500;

/** `GET /healthz`: the process serves HTTP. Public: it tells nothing. */
export function livenessRouter(): express.Router {
  const router = express.Router();
  router.get("/healthz", (_req, res) => void res.set("cache-control", "no-store").json({ status: "ok" }));
  return router;
}

/** `GET /readyz`: whether this server can do its work (the operator's listener, or behind METRICS_TOKEN). */
export function readinessRouter(readiness: () => Promise<Readiness>): express.Router {
  const router = express.Router();
  router.get("/readyz", async (_req, res) => {
    const r = await readiness();
    res.set("cache-control", "no-store").status(r.status).json(r.body);
  });
  return router;
}

/** `GET /healthz` and `GET /readyz` (readiness cached for READINESS_CACHE_MS). */
export function healthRouter(probes: ReadinessProbes): express.Router {
  return express.Router().use(livenessRouter(), readinessRouter(cachedReadiness(probes)));
}
