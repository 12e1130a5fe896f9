import { spawnSync } from "node:child_process";
import path from "node:path";

// node:sqlite's ExperimentalWarning (Node 22 prints it per thread) stays out of operators' logs;
// every other warning still reaches stderr. In a process of its own: jest's sandboxed `process`
// is not the one Node warns through.

it("drops node:sqlite's experimental warning, in the process and in the checkpointer's thread, and nothing else", () => {
  const script = `
    require("./src/nodeWarnings");
    require("node:sqlite");
    const { startCheckpointer } = require("./src/db/checkpointer");
    const { SqliteConnection } = require("./src/db/sqlite");
    const dir = require("node:fs").mkdtempSync(require("node:path").join(require("node:os").tmpdir(), "onair-warn-"));
    const db = new SqliteConnection(dir + "/x.db");
    db.pragma("journal_mode = WAL");
    const c = startCheckpointer(db, () => {});
    setTimeout(() => {
      c.stop(); db.close();
      require("node:fs").rmSync(dir, { recursive: true });
      process.emitWarning("something else is experimental", "ExperimentalWarning");
      process.emitWarning("a deprecation", "DeprecationWarning");
    }, 1500);
  `;
  const run = spawnSync(process.execPath, ["--import", "tsx", "-e", script], { cwd: path.resolve(__dirname, "../.."), encoding: "utf8", timeout: 30_000 });
  expect(run.status).toBe(0);
  expect(run.stderr).not.toMatch(/SQLite is an experimental feature/);
  expect(run.stderr).toMatch(/ExperimentalWarning: something else is experimental/);
  expect(run.stderr).toMatch(/DeprecationWarning: a deprecation/);
});
