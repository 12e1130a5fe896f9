import fs from "node:fs";
import path from "node:path";
import { isStorageError } from "../../../src/db";
import { SqliteConnection, sqliteErrorCode } from "../../../src/db/sqlite";
import { lockDataDir, InstanceLockedError } from "../../../src/instanceLock";
import { tempDir } from "../../helpers/server";

// node:sqlite reports every SQLite error as ERR_SQLITE_ERROR with SQLite's (extended) result
// code in `errcode`: storage errors must still be told apart from bugs by that code.

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("did not throw");
}

describe("SQLite errors from node:sqlite", () => {
  let dir: string;
  beforeEach(() => (dir = tempDir()));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("a full database (SQLITE_FULL) is a storage error", () => {
    const db = new SqliteConnection(path.join(dir, "full.db"));
    db.exec("CREATE TABLE t (b TEXT)");
    db.pragma("max_page_count = 3");
    const err = thrown(() => {
      for (let i = 0; i < 100; i++) db.prepare("INSERT INTO t VALUES (?)").run("x".repeat(4000));
    });
    db.close();
    expect(err).toMatchObject({ code: "ERR_SQLITE_ERROR", errcode: 13 });
    expect(sqliteErrorCode(err)).toBe("SQLITE_FULL");
    expect(isStorageError(err)).toBe(true);
  });

  it("a read-only database (SQLITE_READONLY) is a storage error", () => {
    const db = new SqliteConnection(path.join(dir, "ro.db"));
    db.exec("CREATE TABLE t (x INTEGER)");
    db.pragma("query_only = 1");
    const err = thrown(() => db.prepare("INSERT INTO t VALUES (1)").run());
    db.close();
    expect(sqliteErrorCode(err)).toBe("SQLITE_READONLY");
    expect(isStorageError(err)).toBe(true);
  });

  it("a file that cannot be opened (SQLITE_CANTOPEN) is a storage error", () => {
    const err = thrown(() => new SqliteConnection(path.join(dir, "missing", "folder", "x.db")));
    expect(sqliteErrorCode(err)).toBe("SQLITE_CANTOPEN");
    expect(isStorageError(err)).toBe(true);
  });

  it("extended I/O codes (SQLITE_IOERR_WRITE = 778) are storage errors", () => {
    const err = Object.assign(new Error("disk I/O error"), { code: "ERR_SQLITE_ERROR", errcode: 778, errstr: "disk I/O error" });
    expect(sqliteErrorCode(err)).toBe("SQLITE_IOERR");
    expect(isStorageError(err)).toBe(true);
  });

  it("a busy database, a constraint or a syntax error is not", () => {
    const db = new SqliteConnection(path.join(dir, "x.db"), { timeoutMs: 0 });
    db.exec("CREATE TABLE t (x INTEGER PRIMARY KEY)");
    db.exec("INSERT INTO t VALUES (1)");
    const constraint = thrown(() => db.prepare("INSERT INTO t VALUES (1)").run());
    const syntax = thrown(() => db.exec("THIS IS NOT SQL"));
    const other = new SqliteConnection(path.join(dir, "x.db"), { timeoutMs: 0 });
    other.exec("BEGIN EXCLUSIVE");
    const busy = thrown(() => db.exec("BEGIN EXCLUSIVE"));
    other.close();
    db.close();
    expect([constraint, syntax, busy].map(sqliteErrorCode)).toEqual(["SQLITE_CONSTRAINT", "SQLITE_ERROR", "SQLITE_BUSY"]);
    expect([constraint, syntax, busy].map(isStorageError)).toEqual([false, false, false]);
  });

  it("PostgreSQL's and better-sqlite3-style string codes are read as before", () => {
    expect(isStorageError({ code: "SQLITE_IOERR_WRITE" })).toBe(true);
    expect(isStorageError({ code: "SQLITE_CONSTRAINT_UNIQUE" })).toBe(false);
    expect(isStorageError({ code: "53100" })).toBe(true);
    expect(isStorageError({ code: "ECONNREFUSED" })).toBe(true);
    expect(isStorageError({ code: "23505" })).toBe(false);
    expect(isStorageError(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(isStorageError(new Error("boom"))).toBe(false);
  });

  it("a second onair on the same data directory is refused (the lock's SQLITE_BUSY)", () => {
    const lock = lockDataDir(dir);
    try {
      expect(() => lockDataDir(dir)).toThrow(InstanceLockedError);
      expect(() => lockDataDir(dir)).toThrow(new RegExp(`\\(pid ${process.pid}\\)`));
    } finally {
      lock.release();
    }
    lockDataDir(dir).release();
  });
});
