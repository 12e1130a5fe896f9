import crypto from "node:crypto";
import pg from "pg";
import { RUN_PREFIX } from "./database";

// Tests that need PostgreSQL whichever engine the rest of the suite uses (the cluster's nodes,
// concurrent writers, which SQLite runs one at a time): TEST_DATABASE_URL's server, or the local one.

export const PG_SERVER = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_SERVER });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

export interface ThrowAwayDatabase {
  url: string;
  /** Statements as the test's own client (a small pool, opened on first use). */
  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Removes it, cutting whatever is still connected. */
  drop(): Promise<void>;
}

/** A database of its own, named with this run's prefix (the global teardown drops it if its test cannot). */
export async function throwAwayDatabase(label: string): Promise<ThrowAwayDatabase> {
  const name = `${RUN_PREFIX}${label}_${crypto.randomBytes(4).toString("hex")}`;
  await admin(`CREATE DATABASE "${name}"`);
  const u = new URL(PG_SERVER);
  u.pathname = `/${name}`;
  const url = u.toString();
  let pool: pg.Pool | undefined;
  return {
    url,
    query: async (sql, params) => (await (pool ??= new pg.Pool({ connectionString: url, max: 2 })).query(sql, params)).rows,
    drop: async () => {
      await pool?.end();
      await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}
