import fs from "node:fs";
import express from "express";
import type { Db } from "../db";

export { judgeFreeSpace, MIN_FREE_BYTES, probeStorageWritable, StorageWatch, STORAGE_RESERVE_BYTES, STORAGE_WATCH_MS, type StorageWatchOptions } from "./storage";

// Liveness and readiness, as orchestrators probe them: /healthz answers while the process
// serves HTTP; /readyz says whether it can do its work (take a publish, write state).

export const READINESS_CHECKS = ["database", "storage", "ffmpeg", "rtmp"] as const;
export type ReadinessCheck = (typeof READINESS_CHECKS)[number];

/** Each check throws (or returns a message) when it fails; returns nothing when it passes. */
export type ReadinessProbes = Record<ReadinessCheck, () => string | void>;

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
export function checkReadiness(probes: ReadinessProbes): Readiness {
  const results = {} as Record<ReadinessCheck, string | undefined>;
  for (const c of READINESS_CHECKS) {
    try {
      results[c] = probes[c]() || undefined;
    } catch (err) {
      results[c] = err instanceof Error ? err.message : String(err);
    }
  }
  return judgeReadiness(results);
}

/** The database takes a write: the write lock is taken and given back, nothing is written. */
export function probeDatabaseWritable(db: Db, lockWaitMs = 1000): string | void {
  // Another process (cli, worker) may hold the lock for a moment: wait briefly, not the
  // connection's 5 s, as this blocks the event loop while it waits.
  const previous = db.pragma("busy_timeout", { simple: true }) as number;
  db.pragma(`busy_timeout = ${lockWaitMs}`);
  try {
    db.exec("BEGIN IMMEDIATE");
    db.exec("ROLLBACK");
  } catch (err) {
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

/** `GET /healthz` and `GET /readyz`, without auth; never cached. */
export function healthRouter(probes: ReadinessProbes): express.Router {
  const router = express.Router();
  router.get("/healthz", (_req, res) => void res.set("cache-control", "no-store").json({ status: "ok" }));
  router.get("/readyz", (_req, res) => {
    const r = checkReadiness(probes);
    res.set("cache-control", "no-store").status(r.status).json(r.body);
  });
  return router;
}
