import crypto from "node:crypto";
import path from "node:path";
import pg from "pg";
import { openStore, type DatabaseLocation, type Store } from "../../src/db";

// The suite runs on SQLite by default, and on PostgreSQL when TEST_DATABASE_URL names a server
// (CI sets it): each data directory then gets a database of its own, created on first use and
// dropped with it (test/globalTeardown.ts drops any a crashed test left behind).

/** The server to make test databases on, or undefined: SQLite. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;

/** Names this run's databases: one run's teardown never drops another's. */
export const RUN_PREFIX = `onair_t_${process.env.ONAIR_TEST_RUN ?? process.pid}_`;

function urlWithDatabase(base: string, database: string): string {
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

export function testDatabaseName(dataDir: string): string {
  return RUN_PREFIX + crypto.createHash("sha256").update(path.resolve(dataDir)).digest("hex").slice(0, 16);
}

async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The database for a data directory: SQLite in it, or a PostgreSQL database made for it. */
export async function testDatabaseFor(dataDir: string): Promise<DatabaseLocation> {
  if (!TEST_DATABASE_URL) return { file: path.join(dataDir, "onair.db") };
  const name = testDatabaseName(dataDir);
  await withAdmin(async (c) => {
    const exists = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (exists.rowCount === 0) await c.query(`CREATE DATABASE "${name}"`);
  });
  return { url: urlWithDatabase(TEST_DATABASE_URL, name) };
}

/** Environment for a server on that data directory: DATABASE_URL on PostgreSQL, nothing on SQLite. */
export async function testDatabaseEnv(dataDir: string): Promise<Record<string, string>> {
  const where = await testDatabaseFor(dataDir);
  return "url" in where ? { DATABASE_URL: where.url } : {};
}

/** A store on the data directory's test database. */
export async function openTestStore(dataDir: string): Promise<Store> {
  return openStore(await testDatabaseFor(dataDir));
}

/** Drops the data directory's PostgreSQL database, if it has one (nothing to do on SQLite). */
export async function dropTestDatabase(dataDir: string): Promise<void> {
  if (!TEST_DATABASE_URL) return;
  const name = testDatabaseName(dataDir);
  await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

/** Drops every database this run made (the global teardown). */
export async function dropRunDatabases(prefix = RUN_PREFIX): Promise<number> {
  if (!TEST_DATABASE_URL) return 0;
  return withAdmin(async (c) => {
    const rows = (await c.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1", [`${prefix}%`])).rows;
    for (const r of rows) await c.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
    return rows.length;
  });
}

/**
 * Makes the store's database refuse writes (what a read-only volume or server does), or take
 * them again. SQLite: `query_only` on the server's connection. PostgreSQL: the database's
 * transactions become read-only, and its open connections are cut so that the pool's new ones
 * see it.
 */
export async function setReadOnly(store: Store, readOnly: boolean): Promise<void> {
  if (store.db.sqlite) {
    store.db.sqlite.pragma(`query_only = ${readOnly ? 1 : 0}`);
    return;
  }
  const name = (await store.db.get<{ db: string }>("SELECT current_database() AS db"))!.db;
  await withAdmin(async (c) => {
    await c.query(`ALTER DATABASE "${name}" SET default_transaction_read_only = ${readOnly ? "on" : "off"}`);
    await c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
  });
}

/** What the readiness probe says of a database that refuses writes, on this run's engine. */
export const READ_ONLY_PROBE = TEST_DATABASE_URL ? /^not writable: .*read-only transaction/ : /^not writable: attempt to write a readonly database$/;
