import fs from "node:fs";
import path from "node:path";
import { SqliteConnection, sqliteErrorCode } from "./db";

// One onair per data directory: two processes on one DATA_DIR would each take the other's open
// sessions for a crash's leftovers and end them, and write the same HLS folders. The lock is an
// exclusive SQLite transaction held open on a file of its own: the operating system releases it
// when the process dies, however it dies, so a crash never leaves a stale lock behind.

const LOCK_FILE = "onair.lock";
const PID_FILE = "onair.pid";

export class InstanceLockedError extends Error {
  constructor(dataDir: string, holder: string | undefined) {
    super(
      `another onair is already running on the data directory ${dataDir}${holder ? ` (pid ${holder})` : ""}: ` +
        "stop it first, or give this one its own DATA_DIR",
    );
    this.name = "InstanceLockedError";
  }
}

export interface InstanceLock {
  release(): void;
}

export function lockDataDir(dataDir: string): InstanceLock {
  fs.mkdirSync(dataDir, { recursive: true });
  const db = new SqliteConnection(path.join(dataDir, LOCK_FILE), { timeoutMs: 0 });
  try {
    db.exec("BEGIN EXCLUSIVE");
  } catch (err) {
    db.close();
    if (sqliteErrorCode(err) !== "SQLITE_BUSY") throw err;
    let holder: string | undefined;
    try {
      holder = fs.readFileSync(path.join(dataDir, PID_FILE), "utf8").trim();
    } catch {
      holder = undefined;
    }
    throw new InstanceLockedError(dataDir, holder);
  }
  fs.writeFileSync(path.join(dataDir, PID_FILE), `${process.pid}\n`);
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      fs.rmSync(path.join(dataDir, PID_FILE), { force: true });
      db.close();
    },
  };
}
