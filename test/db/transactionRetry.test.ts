import { postgresDatabase, TRANSACTION_ATTEMPTS, type SqlDatabase } from "../../src/db/sql";
import { throwAwayDatabase } from "../helpers/postgres";

// Sql.transaction on PostgreSQL runs a transaction again when the server aborts it as a
// deadlock's victim or a serialization failure; only the committed attempt's afterCommit hooks
// run, and a transaction joining an outer one leaves the retry to it.

/** A statement that fails with a real PostgreSQL error of that SQLSTATE. */
const raise = (sqlstate: string) => `DO $$ BEGIN RAISE EXCEPTION 'provoked' USING ERRCODE = '${sqlstate}'; END $$`;

describe("PostgreSQL transaction retries", () => {
  let db: SqlDatabase;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const where = await throwAwayDatabase("retry");
    drop = where.drop;
    db = postgresDatabase(where.url);
    await db.run("CREATE TABLE pair (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)");
  });
  afterAll(async () => {
    await db.close();
    await drop();
  });
  beforeEach(async () => {
    await db.run("DELETE FROM pair");
    await db.run("INSERT INTO pair (id, n) VALUES (1, 0), (2, 0)");
  });

  it("runs a deadlock's victim again, and only its committed attempt's afterCommit hooks", async () => {
    const retriesBefore = db.transactionRetries;
    const attempts = { a: 0, b: 0 };
    const hooks: string[] = [];
    // Both first attempts hold their first row before either asks for its second: the two
    // lock the rows in opposite orders, and PostgreSQL aborts one of them.
    let arrived = 0;
    let bothHold!: () => void;
    const holding = new Promise<void>((resolve) => (bothHold = resolve));
    const crossing = (name: "a" | "b", first: number, second: number) =>
      db.transaction(async (tx) => {
        const attempt = ++attempts[name];
        tx.afterCommit(() => hooks.push(`${name}${attempt}`));
        await tx.run("UPDATE pair SET n = n + 1 WHERE id = ?", [first]);
        if (attempt === 1 && ++arrived === 2) bothHold();
        if (attempt === 1) await holding;
        await tx.run("UPDATE pair SET n = n + 1 WHERE id = ?", [second]);
      });
    await Promise.all([crossing("a", 1, 2), crossing("b", 2, 1)]);
    expect(attempts.a + attempts.b).toBe(3);
    // The victim's first attempt registered a hook too: dropped with its rollback.
    expect(hooks.sort()).toEqual(attempts.a === 2 ? ["a2", "b1"] : ["a1", "b2"]);
    expect(await db.all("SELECT id, n FROM pair ORDER BY id")).toEqual([
      { id: 1, n: 2 },
      { id: 2, n: 2 },
    ]);
    expect(db.transactionRetries - retriesBefore).toBe(1);
  });

  it("retries a serialization failure, and a joined transaction's failure only as the whole outer one", async () => {
    let outer = 0;
    let inner = 0;
    const hooks: number[] = [];
    await db.transaction(async (tx) => {
      const attempt = ++outer;
      tx.afterCommit(() => hooks.push(attempt));
      await tx.run("UPDATE pair SET n = n + 1 WHERE id = 1");
      await tx.transaction(async (joined) => {
        inner++;
        if (attempt === 1) await joined.run(raise("40001"));
      });
    });
    expect({ outer, inner, hooks }).toEqual({ outer: 2, inner: 2, hooks: [2] });
    // The failed attempt's update was rolled back with it.
    expect(await db.get("SELECT n FROM pair WHERE id = 1")).toEqual({ n: 1 });
  });

  it("gives up after its attempts, with the server's error", async () => {
    let attempts = 0;
    const run = db.transaction(async (tx) => {
      attempts++;
      await tx.run(raise("40P01"));
    });
    await expect(run).rejects.toMatchObject({ code: "40P01" });
    expect(attempts).toBe(TRANSACTION_ATTEMPTS);
  });

  it("does not retry other failures", async () => {
    let attempts = 0;
    const run = db.transaction(async (tx) => {
      attempts++;
      await tx.run(raise("23505"));
    });
    await expect(run).rejects.toMatchObject({ code: "23505" });
    expect(attempts).toBe(1);
  });
});
