// Node 22 announces node:sqlite with "ExperimentalWarning: SQLite is an experimental feature…" on
// stderr, once per thread that loads it. onair chose node:sqlite knowingly (src/db/sqlite.ts):
// the line would only puzzle operators. Exactly that warning is dropped; every other warning,
// experimental or not, is printed as before. Loaded first by each entry point, and run in the
// checkpointer's thread too (a thread has its own `process.emitWarning`).

/**
 * The filter as plain JavaScript, run as is here and in the checkpointer's thread: source text
 * rather than a function's toString(), which is whatever a transpiler or a coverage tool made of
 * it (and may call helpers the thread does not have).
 */
export const DROP_SQLITE_WARNING_SOURCE = `(() => {
  const marker = Symbol.for("onair.dropSqliteExperimentalWarning");
  if (process[marker]) return;
  process[marker] = true;
  const emit = process.emitWarning;
  process.emitWarning = function (warning, ...rest) {
    const type = typeof rest[0] === "string" ? rest[0] : (rest[0] && rest[0].type) || (warning && warning.name);
    const text = typeof warning === "string" ? warning : warning && warning.message;
    if (type === "ExperimentalWarning" && typeof text === "string" && text.startsWith("SQLite is an experimental feature")) return;
    return emit.call(process, warning, ...rest);
  };
})();`;

/** Installs the filter on this thread's `process` (once). */
export function dropSqliteExperimentalWarning(): void {
  new Function(DROP_SQLITE_WARNING_SOURCE)();
}

dropSqliteExperimentalWarning();
