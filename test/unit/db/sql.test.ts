import path from "node:path";
import { openDatabase } from "../../../src/db/connection";
import { sqliteDatabase } from "../../../src/db/sql";
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
