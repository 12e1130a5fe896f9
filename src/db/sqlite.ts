import "../nodeWarnings";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";

// onair's SQLite connection: Node's own `node:sqlite` (no native module to build, nothing tied to
// one Node version's ABI), with the few conveniences the rest of the code uses: pragmas read as
// values, transactions around a function, the file's name.

/** A SQLite error's primary result code by name ("SQLITE_BUSY"), whichever driver raised it. */
export function sqliteErrorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; errcode?: unknown } | null;
  // node:sqlite: code "ERR_SQLITE_ERROR", the (extended) result code as a number in `errcode`.
  if (typeof e?.errcode === "number") return PRIMARY_CODES[e.errcode & 0xff];
  return typeof e?.code === "string" && e.code.startsWith("SQLITE_") ? e.code.replace(/^(SQLITE_[A-Z]+)_.*$/, "$1") : undefined;
}

/** SQLite's primary result codes (sqlite3.h). */
const PRIMARY_CODES: Record<number, string> = {
  1: "SQLITE_ERROR",
  2: "SQLITE_INTERNAL",
  3: "SQLITE_PERM",
  4: "SQLITE_ABORT",
  5: "SQLITE_BUSY",
  6: "SQLITE_LOCKED",
  7: "SQLITE_NOMEM",
  8: "SQLITE_READONLY",
  9: "SQLITE_INTERRUPT",
  10: "SQLITE_IOERR",
  11: "SQLITE_CORRUPT",
  12: "SQLITE_NOTFOUND",
  13: "SQLITE_FULL",
  14: "SQLITE_CANTOPEN",
  15: "SQLITE_PROTOCOL",
  16: "SQLITE_EMPTY",
  17: "SQLITE_SCHEMA",
  18: "SQLITE_TOOBIG",
  19: "SQLITE_CONSTRAINT",
  20: "SQLITE_MISMATCH",
  21: "SQLITE_MISUSE",
  22: "SQLITE_NOLFS",
  23: "SQLITE_AUTH",
  24: "SQLITE_FORMAT",
  25: "SQLITE_RANGE",
  26: "SQLITE_NOTADB",
};

export type Statement = StatementSync;

export class SqliteConnection {
  private readonly db: DatabaseSync;
  /** The file opened (":memory:" for none). */
  readonly name: string;

  /** `timeoutMs`: how long a statement waits for another connection's lock (busy_timeout). */
  constructor(file: string, opts: { timeoutMs?: number } = {}) {
    this.db = new DatabaseSync(file, { timeout: opts.timeoutMs ?? 5000 });
    this.name = file;
  }

  get open(): boolean {
    return this.db.isOpen;
  }

  get inTransaction(): boolean {
    return this.db.isTransaction;
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  prepare(sql: string): StatementSync {
    return this.db.prepare(sql);
  }

  /** Runs a pragma: its rows, or with `simple` the first column of the first row. */
  pragma(source: string, opts: { simple?: boolean } = {}): unknown {
    const stmt = this.db.prepare(`PRAGMA ${source}`);
    if (!opts.simple) return stmt.all();
    const row = stmt.get();
    return row === undefined ? undefined : Object.values(row)[0];
  }

  /** Runs `fn` in a transaction (`begin`: "BEGIN", "BEGIN IMMEDIATE"…); rolls back if it throws. */
  transaction<T>(fn: () => T, begin = "BEGIN"): T {
    this.db.exec(begin);
    try {
      const value = fn();
      this.db.exec("COMMIT");
      return value;
    } catch (err) {
      if (this.db.isTransaction) this.db.exec("ROLLBACK");
      throw err;
    }
  }

  /** Adds a deterministic SQL function. */
  function(name: string, fn: (...args: SQLInputValue[]) => SQLInputValue): void {
    this.db.function(name, { deterministic: true }, fn);
  }

  close(): void {
    this.db.close();
  }
}
