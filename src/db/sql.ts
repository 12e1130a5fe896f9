import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase, type SqliteStatement } from "kysely";
import type { SQLInputValue } from "node:sqlite";
import pg from "pg";
import type { SqliteConnection } from "./sqlite";

// One way to run SQL on either engine. Repositories write plain SQL with `?` placeholders in the
// subset both SQLite and PostgreSQL speak (epoch-ms integers, 0/1 flags, JSON as text,
// ON CONFLICT, RETURNING); Kysely's dialects run it: the pool, the single SQLite connection and
// its queue, the parameter passing. A transaction holds one connection from BEGIN to COMMIT.

export type Dialect = "sqlite" | "postgres";

export type Params = readonly unknown[];

/** A handle to run statements on: the database, or one open transaction. */
export interface Sql {
  readonly dialect: Dialect;
  /** The first row, or undefined. */
  get<R>(text: string, params?: Params): Promise<R | undefined>;
  all<R>(text: string, params?: Params): Promise<R[]>;
  /** Runs a statement; resolves to the number of rows it changed. */
  run(text: string, params?: Params): Promise<number>;
  /**
   * Runs `work` in a transaction (SQLite: BEGIN IMMEDIATE, so writers queue for the lock
   * instead of failing to upgrade). Inside one already, joins it. One that PostgreSQL aborts as
   * a deadlock's victim or a serialization failure is run again from the start, a few times
   * (the outermost transaction retries, never a joined one): `work` must do nothing but
   * statements on `tx`, and register anything else with afterCommit.
   */
  transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T>;
  /** Runs `fn` once the current transaction has committed (at once outside one); dropped on rollback. */
  afterCommit(fn: () => void): void;
  /** The database handle this one belongs to (itself outside a transaction): a stable identity. */
  readonly root: Sql;
}

/** The open database: statements, and what the engine-specific edges need. */
export interface SqlDatabase extends Sql {
  /** The raw SQLite connection (the checkpointer, the health probe): SQLite only. */
  readonly sqlite?: SqliteConnection;
  /** False once closed: writes retried later give up. */
  readonly isOpen: boolean;
  /** Transactions run again since the database opened (deadlock victims, serialization failures). */
  readonly transactionRetries: number;
  close(): Promise<void>;
}

/**
 * Serializes transactions that work on the same `key` until they end: checks and writes that
 * must not interleave (a per-user cap, a webhook lane). SQLite runs one writer at a time
 * already; PostgreSQL takes a transaction-scoped advisory lock.
 */
export async function lockKey(q: Sql, key: string): Promise<void> {
  if (q.dialect === "postgres") await q.run("SELECT pg_advisory_xact_lock(hashtext(?))", [key]);
}

/**
 * SQLSTATEs with which PostgreSQL aborts a transaction that can succeed if run again: it was a
 * deadlock's victim (40P01) or could not be serialized with a concurrent one (40001).
 */
const RETRYABLE_SQLSTATES = new Set(["40P01", "40001"]);

/** Whether a transaction that failed with `err` is worth running again. */
export function isRetryableTransactionError(err: unknown): boolean {
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === "string" && RETRYABLE_SQLSTATES.has(code);
}

/** Runs of a transaction before its retryable failure is the caller's. */
export const TRANSACTION_ATTEMPTS = 5;

/**
 * The pause (ms) before running a transaction again after its attempt `attempt` (from 1) failed
 * retryably, or null: no attempts left. Doubling from 5 ms (at most about 110 ms in all, well
 * under a segment), each pause scaled by 0.5 + `random` (0 ≤ random < 1) so that two victims of
 * one conflict do not meet again in step.
 */
export function transactionRetryDelay(attempt: number, random: number): number | null {
  if (attempt >= TRANSACTION_ATTEMPTS) return null;
  return Math.round(5 * 2 ** (attempt - 1) * (0.5 + random));
}

/** `?` → `$1, $2…` for PostgreSQL, outside quoted strings. */
export function numberPlaceholders(text: string): string {
  let n = 0;
  let out = "";
  let quote: string | null = null;
  for (const ch of text) {
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === "?") {
      out += `$${++n}`;
      continue;
    }
    out += ch;
  }
  return out;
}

/** Statement texts as PostgreSQL takes them, converted once. */
const pgTexts = new Map<string, string>();

/** What a database's handles count together. */
interface Counts {
  transactionRetries: number;
}

class Handle implements Sql {
  readonly root: Sql;

  constructor(
    readonly dialect: Dialect,
    private readonly k: Kysely<unknown>,
    root: Sql | null,
    private readonly commitHooks: (() => void)[] | null,
    protected readonly counts: Counts,
  ) {
    this.root = root ?? this;
  }

  private text(t: string): string {
    if (this.dialect === "sqlite") return t;
    let out = pgTexts.get(t);
    if (out === undefined) pgTexts.set(t, (out = numberPlaceholders(t)));
    return out;
  }

  private async exec<R>(text: string, params: Params = []) {
    return this.k.executeQuery<R>(CompiledQuery.raw(this.text(text), [...params]));
  }

  async get<R>(text: string, params?: Params): Promise<R | undefined> {
    return (await this.exec<R>(text, params)).rows[0];
  }

  async all<R>(text: string, params?: Params): Promise<R[]> {
    return (await this.exec<R>(text, params)).rows;
  }

  async run(text: string, params?: Params): Promise<number> {
    const r = await this.exec(text, params);
    return Number(r.numAffectedRows ?? 0);
  }

  async transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T> {
    // Joined: a retryable failure aborted the outer transaction too, which runs again whole.
    if (this.commitHooks) return work(this);
    for (let attempt = 1; ; attempt++) {
      // Each attempt its own hooks: only the committed one's run.
      const hooks: (() => void)[] = [];
      let result: T;
      try {
        result = await this.attempt(work, hooks);
      } catch (err) {
        const delay = isRetryableTransactionError(err) ? transactionRetryDelay(attempt, Math.random()) : null;
        if (delay === null) throw err;
        this.counts.transactionRetries++;
        // The connection went back to the pool: the pause holds none.
        await new Promise((resolve) => setTimeout(resolve, delay));
        continue;
      }
      for (const fn of hooks) fn();
      return result;
    }
  }

  private async attempt<T>(work: (tx: Sql) => Promise<T>, hooks: (() => void)[]): Promise<T> {
    return this.k.connection().execute(async (conn) => {
      const tx = new Handle(this.dialect, conn, this.root, hooks, this.counts);
      await conn.executeQuery(CompiledQuery.raw(this.dialect === "sqlite" ? "BEGIN IMMEDIATE" : "BEGIN"));
      try {
        const value = await work(tx);
        await conn.executeQuery(CompiledQuery.raw("COMMIT"));
        return value;
      } catch (err) {
        await conn.executeQuery(CompiledQuery.raw("ROLLBACK")).catch(() => undefined);
        throw err;
      }
    });
  }

  afterCommit(fn: () => void): void {
    if (this.commitHooks) this.commitHooks.push(fn);
    else fn();
  }
}

class Root extends Handle implements SqlDatabase {
  isOpen = true;

  constructor(
    dialect: Dialect,
    private readonly kysely: Kysely<unknown>,
    readonly sqlite?: SqliteConnection,
  ) {
    super(dialect, kysely, null, null, { transactionRetries: 0 });
  }

  get transactionRetries(): number {
    return this.counts.transactionRetries;
  }

  async close(): Promise<void> {
    if (!this.isOpen) return;
    this.isOpen = false;
    await this.kysely.destroy();
    // Kysely opens its driver at the first query: a store closed before one never handed it the connection.
    if (this.sqlite?.open) this.sqlite.close();
  }
}

/**
 * Kysely's SQLite dialect over a node:sqlite connection. Its statements take their parameters
 * as one array and say whether they return rows; node:sqlite's take them spread and list their
 * result columns (none for a statement that returns no rows). node:sqlite compiles a statement
 * per prepare and Kysely prepares per query: the repositories run the same few statements all
 * the time, so each is compiled once. Integers come back as numbers, as before (onair's are
 * epoch milliseconds, counts and byte sizes).
 */
function kyselySqlite(db: SqliteConnection): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => {
      if (db.open) db.close();
    },
    prepare(text) {
      let stmt = cache.get(text);
      if (!stmt) {
        const s = db.prepare(text);
        // undefined binds as NULL, as it does on PostgreSQL (node:sqlite alone would throw).
        const args = (p: ReadonlyArray<unknown>) => p.map((v) => (v === undefined ? null : v)) as SQLInputValue[];
        stmt = {
          reader: s.columns().length > 0,
          all: (p) => s.all(...args(p)),
          run: (p) => s.run(...args(p)),
          iterate: (p) => s.iterate(...args(p)),
        };
        cache.set(text, stmt);
      }
      return stmt;
    },
  };
}

export function sqliteDatabase(db: SqliteConnection): SqlDatabase {
  return new Root("sqlite", new Kysely({ dialect: new SqliteDialect({ database: kyselySqlite(db) }) }), db);
}

/**
 * PostgreSQL returns int8 and numeric as strings (they may not fit a double); onair's are
 * epoch milliseconds, byte counts and sums of them, which do.
 */
const pgTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === 20 || oid === 1700) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format);
  },
};

export function postgresDatabase(url: string, opts: { max?: number; applicationName?: string } = {}): SqlDatabase {
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 10, types: pgTypes as pg.CustomTypesConfig, application_name: opts.applicationName });
  // An idle client's error (the server restarted) must not crash the process: the pool drops it.
  pool.on("error", () => undefined);
  // Nor a busy one's: a connection cut under a query (the server restarted, an operator's
  // pg_terminate_backend) fails that query, which its caller sees; the client's own "error"
  // event, with no listener while it is checked out, would be thrown out of the process.
  pool.on("connect", (client) => void client.on("error", () => undefined));
  return new Root("postgres", new Kysely({ dialect: new PostgresDialect({ pool }) }));
}

export { pgTypes };
