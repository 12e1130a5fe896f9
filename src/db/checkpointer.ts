import { Worker } from "node:worker_threads";
import type { Db } from "./connection";
import { DROP_SQLITE_WARNING_SOURCE } from "../nodeWarnings";

// SQLite in WAL mode copies the log back into the database (a checkpoint) from whichever
// connection commits past 1000 pages, inside that commit: 4 MiB of writes and an fsync on the
// event loop, tens to hundreds of ms, every few thousand rows (a webhook fan-out, a burst of
// deliveries). A long-running process instead checkpoints from a thread of its own: PASSIVE
// checkpoints wait for no one and block no writer, so commits on the loop stay short.

/** How often the thread checkpoints. The log grows by at most what is written in between. */
const CHECKPOINT_EVERY_MS = 1_000;

// The thread's code: a connection of its own (node:sqlite, as the process's) and a timer.
// CommonJS, run with \`eval\`; the thread drops node:sqlite's experimental warning as the
// process does (src/nodeWarnings.ts).
const THREAD_SOURCE = `
${DROP_SQLITE_WARNING_SOURCE}
const { parentPort, workerData } = require("node:worker_threads");
const { DatabaseSync } = require("node:sqlite");
const db = new DatabaseSync(workerData.file, { timeout: 5000 });
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
let failing = false;
const timer = setInterval(() => {
  try {
    checkpoint.all();
    if (failing) parentPort.postMessage({ recovered: true });
    failing = false;
  } catch (err) {
    if (!failing) parentPort.postMessage({ error: String(err && err.message || err) });
    failing = true;
  }
}, workerData.everyMs);
parentPort.on("message", () => {
  clearInterval(timer);
  try { db.close(); } catch {}
  // The closing thread waits on this: its own close must be the last, which ends the log.
  Atomics.store(workerData.closed, 0, 1);
  Atomics.notify(workerData.closed, 0);
  parentPort.close();
});
`;

export interface Checkpointer {
  /**
   * Stops the thread and waits (at most 2 s) for it to close its connection, so that `db`'s
   * close, the last, checkpoints fully and removes the log: nothing of the database's is
   * still being written once the caller goes on (deletes the folder, takes a backup).
   */
  stop(): void;
}

/** How long stop() waits for the thread's connection to close (a checkpoint under way first). */
const STOP_WAIT_MS = 2_000;

/**
 * Moves `db`'s checkpoints to a thread. `onProblem` hears when checkpoints start and stop
 * failing (the log then grows until they succeed again; nothing is lost).
 */
export function startCheckpointer(db: Db, onProblem: (problem: { error?: string; recovered?: boolean }) => void): Checkpointer {
  const closed = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(THREAD_SOURCE, {
    eval: true,
    workerData: { file: db.name, everyMs: CHECKPOINT_EVERY_MS, closed },
  });
  let stopped = false;
  worker.on("message", onProblem);
  // A thread that died (it could not open the file, its code failed): the connection on the
  // loop checkpoints again, and nothing waits for a close that will never come.
  const died = () => {
    Atomics.store(closed, 0, 1);
    if (!stopped && db.open) db.pragma("wal_autocheckpoint = 1000");
  };
  worker.on("error", (err) => {
    onProblem({ error: `${err.message}; checkpoints go back to the connection's own commits` });
    died();
  });
  worker.on("exit", died);
  // A thread alone must not keep the process alive.
  worker.unref();
  db.pragma("wal_autocheckpoint = 0");
  return {
    stop: () => {
      if (stopped) return;
      stopped = true;
      if (db.open) db.pragma("wal_autocheckpoint = 1000");
      worker.postMessage("stop");
      // Synchronous, as closing a database is: a shutdown's last few ms. A thread still opening
      // or stuck is not waited for beyond the bound; a log it leaves is replayed, never lost.
      Atomics.wait(closed, 0, 0, STOP_WAIT_MS);
    },
  };
}

/** What an operator needs to hear about background checkpoints. */
export function logCheckpoints(log: { warn(o: object, m: string): void; info(o: object, m: string): void }, p: { error?: string; recovered?: boolean }): void {
  if (p.error) log.warn({ error: p.error }, "database checkpoints are failing: the write-ahead log grows until they succeed (nothing is lost)");
  else if (p.recovered) log.info({}, "database checkpoints succeed again");
}
