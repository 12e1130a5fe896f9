import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { sha256Hex } from "./ids";
import { SqliteConnection, type Statement } from "./sqlite";
import { postgresDatabase, sqliteDatabase, type SqlDatabase } from "./sql";

export type Db = SqliteConnection;

const MIGRATIONS_DIR = path.join(__dirname, "migrations", "sqlite");
const PG_MIGRATIONS_DIR = path.join(__dirname, "migrations", "postgres");

/** Where state lives: a SQLite file (embedded), or a PostgreSQL URL (shared by several nodes). */
export type DatabaseLocation = { file: string } | { url: string; /** PostgreSQL's application_name for the pool's connections. */ name?: string };

/** Opens the database and brings its schema up to date. */
export async function openSql(where: DatabaseLocation): Promise<SqlDatabase> {
  if ("file" in where) return sqliteDatabase(openDatabase(where.file));
  await migratePostgres(where.url);
  return postgresDatabase(where.url, { applicationName: where.name });
}

/** An arbitrary constant: the advisory lock that makes nodes starting together migrate one at a time. */
const MIGRATION_LOCK = 4_172_016;

/**
 * Applies PostgreSQL's numbered migrations not yet run, each in its own transaction, holding a
 * session advisory lock meanwhile: several nodes may start at once, and one migrates while the
 * others wait, then find nothing left to do.
 */
export async function migratePostgres(url: string, dir = PG_MIGRATIONS_DIR): Promise<number[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    await client.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    );
    const applied = new Set((await client.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map((r) => r.version));
    const ran: number[] = [];
    for (const m of readMigrations(dir)) {
      if (applied.has(m.version)) continue;
      await client.query("BEGIN");
      try {
        await client.query(m.sql);
        await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [m.version, m.name, Date.now()]);
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK");
        throw err;
      }
      ran.push(m.version);
    }
    return ran;
  } finally {
    await client.end();
  }
}

/**
 * Opens (creating if needed) the SQLite database in WAL mode and applies every numbered
 * migration in `migrations/` that has not run yet, each in its own transaction.
 */
export function openDatabase(file: string, migrationsDir = MIGRATIONS_DIR): Db {
  if (file !== ":memory:") fs.mkdirSync(path.dirname(file), { recursive: true });
  // The CLI may write while the server runs: wait for the lock (busy_timeout) instead of failing.
  const db = new SqliteConnection(file, { timeoutMs: 5000 });
  db.pragma("journal_mode = WAL");
  // WAL with synchronous=NORMAL is durable across process crashes (only a power loss can
  // drop the last transactions), at a fraction of FULL's fsync cost.
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  // Migrations hash existing secrets (003).
  db.function("sha256_hex", (v) => (typeof v === "string" ? sha256Hex(v) : null));
  migrate(db, migrationsDir);
  return db;
}

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Migrations are files named `NNN_description.sql`, applied in numeric order. */
export function readMigrations(dir: string): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .map((f) => ({
      version: Number(f.split("_")[0]),
      name: f,
      sql: fs.readFileSync(path.join(dir, f), "utf8"),
    }))
    .sort((a, b) => a.version - b.version);
}

export function migrate(db: Db, dir: string): number[] {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  const applied = new Set(
    (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((r) => r.version),
  );
  const ran: number[] = [];
  for (const m of readMigrations(dir)) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
        m.version,
        m.name,
        Date.now(),
      );
    }, "BEGIN IMMEDIATE");
    ran.push(m.version);
  }
  return ran;
}

/**
 * Prepared statements, compiled once per SQL text: preparing costs more than running a
 * simple query, and repositories run the same few statements all the time.
 */
export function statementCache(db: Db): (sql: string) => Statement {
  const cache = new Map<string, Statement>();
  return (sql) => {
    let stmt = cache.get(sql);
    if (!stmt) {
      stmt = db.prepare(sql);
      cache.set(sql, stmt);
    }
    return stmt;
  };
}
