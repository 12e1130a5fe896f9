import path from "node:path";
import { openDatabase } from "../../../src/db/connection";
import { isRetryableTransactionError, sqliteDatabase, TRANSACTION_ATTEMPTS, transactionRetryDelay } from "../../../src/db/sql";
import { probeDatabaseWritable } from "../../../src/health";
import { tempDir } from "../../helpers/server";

// The SQLite side of the one statement interface, on node:sqlite: what it binds and how a
// transaction that awaits between its statements shares the connection.
describe("sqliteDatabase", () => {
  const open = () => sqliteDatabase(openDatabase(path.join(tempDir("sql-"), "onair.db")));

  it("binds undefined as NULL, as PostgreSQL does", async () => {
    const db = open();
    try {
      expect(await db.get<{ v: unknown }>("SELECT ? AS v", [undefined])).toEqual({ v: null });
      expect(await db.get<{ v: unknown }>("SELECT coalesce(?, 'none') AS v", [undefined])).toEqual({ v: "none" });
    } finally {
      await db.close();
    }
  });

  it("the readiness probe leaves an open transaction of ours alone, and still finds the database writable", async () => {
    const db = open();
    try {
      await db.run("CREATE TABLE t (n INTEGER)");
      let probed: string | void = "not run";
      await db.transaction(async (tx) => {
        await tx.run("INSERT INTO t (n) VALUES (1)");
        // The transaction waits on something else; the probe runs meanwhile.
        probed = await probeDatabaseWritable(db);
        await tx.run("INSERT INTO t (n) VALUES (2)");
      });
      expect(probed).toBeUndefined();
      expect(await db.all<{ n: number }>("SELECT n FROM t ORDER BY n")).toEqual([{ n: 1 }, { n: 2 }]);
      expect(await probeDatabaseWritable(db)).toBeUndefined();
    } finally {
      await db.close();
    }
  });
});

describe("transactionRetryDelay", () => {
  it.each([
    // attempt that failed, random, pause before the next (ms)
    [1, 0, 3],
    [1, 0.5, 5],
    [1, 0.999, 7],
    [2, 0, 5],
    [2, 0.5, 10],
    [3, 0.5, 20],
    [4, 0, 20],
    [4, 0.5, 40],
    [4, 0.999, 60],
  ])("after attempt %i, random %d: %i ms", (attempt, random, ms) => {
    expect(transactionRetryDelay(attempt, random)).toBe(ms);
  });

  it.each([TRANSACTION_ATTEMPTS, TRANSACTION_ATTEMPTS + 1])("after attempt %i: gives up", (attempt) => {
    expect(transactionRetryDelay(attempt, 0.5)).toBeNull();
  });

  it("all the pauses together stay short: under 200 ms at worst", () => {
    let total = 0;
    for (let attempt = 1; attempt < TRANSACTION_ATTEMPTS; attempt++) total += transactionRetryDelay(attempt, 0.999)!;
    expect(total).toBeLessThan(200);
  });
});

describe("isRetryableTransactionError", () => {
  const withCode = (code: unknown) => Object.assign(new Error("x"), { code });
  it.each([
    ["a deadlock's victim (40P01)", true, withCode("40P01")],
    ["a serialization failure (40001)", true, withCode("40001")],
    ["a unique violation (23505)", false, withCode("23505")],
    ["a lock timeout (55P03)", false, withCode("55P03")],
    ["a read-only transaction (25006)", false, withCode("25006")],
    ["a SQLite error", false, withCode("ERR_SQLITE_ERROR")],
    ["a numeric code", false, withCode(40001)],
    ["an error without a code", false, new Error("40P01")],
    ["a plain object with the code", true, { code: "40P01" }],
    ["a string", false, "40P01"],
    ["null", false, null],
    ["undefined", false, undefined],
  ])("%s: retried %s", (_what, retried, err) => {
    expect(isRetryableTransactionError(err)).toBe(retried);
  });
});
