// A full or read-only disk makes SQLite refuse writes while reads go on. Such a refusal is the
// machine's state, not a bug: writes that must not be lost wait for room, and the API answers
// 503 rather than 500.

import { sqliteErrorCode } from "./sqlite";

const STORAGE_ERROR_CODES = ["SQLITE_FULL", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN"];

/**
 * PostgreSQL's equivalents, and its absence: disk full, out of memory, a read-only server, a
 * server shutting down or unreachable (SQLSTATE classes 53, 57P, 08, and socket errors).
 */
const PG_UNAVAILABLE = /^(53\d{3}|57P0[1-3]|08\d{3}|25006|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE)$/;

/** The database could not write for want of storage (full, read-only or failing disk) or could not be reached. */
export function isStorageError(err: unknown): boolean {
  // node:sqlite names every error ERR_SQLITE_ERROR and gives SQLite's own code as a number.
  const sqlite = sqliteErrorCode(err);
  if (sqlite) return STORAGE_ERROR_CODES.includes(sqlite);
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return /Connection terminated/.test(String((err as Error | null)?.message));
  return STORAGE_ERROR_CODES.some((c) => code === c || code.startsWith(`${c}_`)) || PG_UNAVAILABLE.test(code);
}

/**
 * Runs a write; while it fails for want of storage, tries again every `everyMs` for up to
 * `forMs` (a delivery's outcome, once its receiver has answered, must not be lost to a disk
 * that is full for a moment), or until `giveUp` says so. Other errors, and the last storage
 * error, are thrown.
 */
export async function writeWhenStorageAllows<T>(
  write: () => T | Promise<T>,
  opts: { everyMs?: number; forMs?: number; giveUp?: () => boolean } = {},
): Promise<T> {
  const { everyMs = 1000, forMs = 20_000, giveUp } = opts;
  const deadline = Date.now() + forMs;
  for (;;) {
    try {
      return await write();
    } catch (err) {
      // Shutting down: no more waiting (the job's lease hands it to the next run).
      if (!isStorageError(err) || Date.now() + everyMs > deadline || giveUp?.()) throw err;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }
}
