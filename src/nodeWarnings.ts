// Node 22 announces node:sqlite with "ExperimentalWarning: SQLite is an experimental feature…" on
// stderr, once per thread that loads it. onair chose node:sqlite knowingly (src/db/sqlite.ts):
// the line would only puzzle operators. Exactly that warning is dropped; every other warning,
// experimental or not, is printed as before. Loaded first by each entry point, and run in the
// checkpointer's thread too (a thread has its own `process.emitWarning`).

/** Installs the filter on this thread's `process`. Self-contained: its source runs in threads. */
export function dropSqliteExperimentalWarning(): void {
  const marker = Symbol.for("onair.dropSqliteExperimentalWarning");
  const proc = process as unknown as Record<symbol, boolean> & NodeJS.Process;
  if (proc[marker]) return;
  proc[marker] = true;
  const emit = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const type = typeof rest[0] === "string" ? rest[0] : (rest[0] as { type?: string } | undefined)?.type ?? (warning as Error).name;
    const text = typeof warning === "string" ? warning : warning?.message;
    if (type === "ExperimentalWarning" && typeof text === "string" && text.startsWith("SQLite is an experimental feature")) return;
    return (emit as (...a: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
}

dropSqliteExperimentalWarning();
