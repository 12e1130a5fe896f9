import fs from "node:fs";
import path from "node:path";
import { openStore } from "../../../src/db";
import { tempDir } from "../../helpers/server";

// Long-running processes checkpoint SQLite's write-ahead log from a thread, not inside commits
// on the event loop.

async function until(done: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

it("commits leave the log to the thread, which copies it into the database", async () => {
  const dir = tempDir();
  const file = path.join(dir, "onair.db");
  const problems: unknown[] = [];
  const store = await openStore(file, { checkpointInBackground: (p) => problems.push(p) });
  const db = store.db.sqlite!;
  try {
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
    const before = fs.statSync(file).size;
    db.exec("CREATE TABLE filler (b BLOB)");
    const insert = db.prepare("INSERT INTO filler (b) VALUES (?)");
    // 8 MiB, 2000 pages: past SQLite's 1000-page auto-checkpoint, which no commit runs now.
    for (let t = 0; t < 8; t++) db.transaction(() => { for (let i = 0; i < 16; i++) insert.run(Buffer.alloc(64 * 1024, t)); });
    expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(8 * 1024 * 1024);
    await until(() => fs.statSync(file).size > before + 8 * 1024 * 1024, "the thread to copy the log into the database");
    expect(problems).toEqual([]);
  } finally {
    await store.close();
  }
  // close() waits for the thread's connection to close, so its own (the last) ends the log:
  // nothing writes in the folder any more once it returns.
  expect(fs.existsSync(`${file}-wal`)).toBe(false);
  fs.rmSync(dir, { recursive: true, force: true });
  expect(fs.existsSync(dir)).toBe(false);
});

it("stores opened without it keep SQLite's own checkpoints", async () => {
  const dir = tempDir();
  const store = await openStore(path.join(dir, "onair.db"));
  try {
    expect(store.db.sqlite!.pragma("wal_autocheckpoint", { simple: true })).toBe(1000);
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
