import fs from "node:fs";
import path from "node:path";

// The module rules of docs/architecture.md#module-rules, read off the source tree: each folder of src/ exposes its interface
// from its index.ts and other folders import only that; the API is on top (only server.ts,
// which wires everything together, imports it); src/shapes is below everything (it imports
// nothing of src/); media knows no database types; and folders do not import each other in a
// circle. Files directly in src/ (log.ts, server.ts, …) count as modules of their own.

const SRC = path.resolve(__dirname, "../../src");

/** The file that wires every module into the running service: above everything, the API too. */
const COMPOSITION_ROOT = "server.ts";

/**
 * Cross-folder imports that may name a file inside another folder instead of its index.
 * Each entry is `<importing file> -> <imported file>`, relative to src/, with the reason.
 */
const INDEX_EXCEPTIONS = new Set<string>([
  // none: every folder's index exports what other folders use
]);

/** Every module a file names: `import … from`, `export … from`, `import "…"`, `require("…")`, `import("…")`. */
function importedSpecifiers(source: string): string[] {
  const patterns = [
    /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\b(?:require|import)\s*\(\s*["']([^"']+)["']\s*\)/g,
  ];
  return patterns.flatMap((re) => [...source.matchAll(re)].map((m) => m[1]!));
}

/** `api/routes/streams.ts` → `api`; a file directly in src/ (`server.ts`) is its own module. */
const moduleOf = (file: string) => (file.includes("/") ? file.slice(0, file.indexOf("/")) : file.replace(/\.ts$/, ""));

/** A relative specifier of `from` (relative to src/) → the file it names, relative to src/, if inside src/. */
function resolveInSrc(from: string, specifier: string, files: ReadonlyMap<string, string>): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  if (target.startsWith("..")) return undefined;
  for (const candidate of [target + ".ts", target + "/index.ts", target]) {
    if (files.has(candidate)) return candidate;
  }
  return target + ".ts";
}

/** The rules above, over a source tree (path relative to src/ → text); one message per violation. */
function layeringViolations(files: ReadonlyMap<string, string>): string[] {
  const violations: string[] = [];
  const edges = new Map<string, Set<string>>();
  for (const [file, source] of files) {
    const from = moduleOf(file);
    for (const specifier of importedSpecifiers(source)) {
      const target = resolveInSrc(file, specifier, files);
      if (target === undefined) continue;
      const to = moduleOf(target);
      if (to === from) continue;
      const line = `${file} imports "${specifier}"`;
      if (to === "api" && file !== COMPOSITION_ROOT) violations.push(`${line}: only src/api may import src/api (it is the top layer)`);
      if (from === "shapes") violations.push(`${line}: src/shapes imports nothing of src/ (it is below everything)`);
      if (from === "media" && to === "db") violations.push(`${line}: src/media imports no database types (use src/shapes)`);
      const isFolder = target.includes("/");
      if (isFolder && target !== `${to}/index.ts` && !INDEX_EXCEPTIONS.has(`${file} -> ${target}`)) {
        violations.push(`${line}: import src/${to} through its index.ts`);
      }
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
    }
  }
  violations.push(...moduleCycles(edges).map((cycle) => `modules import each other in a circle: ${cycle.join(" -> ")}`));
  return violations;
}

/** Each circle of the module graph, found once (depth-first search). */
function moduleCycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const cycles: string[][] = [];
  const done = new Set<string>();
  const stack: string[] = [];
  const visit = (m: string) => {
    const at = stack.indexOf(m);
    if (at >= 0) return void cycles.push([...stack.slice(at), m]);
    if (done.has(m)) return;
    stack.push(m);
    for (const next of [...(edges.get(m) ?? [])].sort()) visit(next);
    stack.pop();
    done.add(m);
  };
  for (const m of [...edges.keys()].sort()) visit(m);
  return cycles;
}

function readTree(dir: string, base = dir, out = new Map<string, string>()): Map<string, string> {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) readTree(full, base, out);
    else if (entry.name.endsWith(".ts")) out.set(path.relative(base, full).split(path.sep).join("/"), fs.readFileSync(full, "utf8"));
  }
  return out;
}

describe("module layering", () => {
  it("src/ follows the rules", () => {
    const tree = readTree(SRC);
    expect(tree.size).toBeGreaterThan(50);
    expect(layeringViolations(tree)).toEqual([]);
  });

  // The checker itself, on small made-up trees, so a rule that silently stopped matching shows.
  const tree = (files: Record<string, string>) =>
    new Map(Object.entries({ "api/index.ts": "", "api/present.ts": "", "db/index.ts": "", "db/types.ts": "", "shapes/index.ts": "", "events/index.ts": "", ...files }));

  it.each([
    ["events imports the API's presenters", { "events/sink.ts": 'import { presentStream } from "../api/present";' }, /only src\/api may import src\/api/],
    ["events imports the API's index", { "events/sink.ts": 'import type { StreamJson } from "../api";' }, /only src\/api may import src\/api/],
    ["a multi-line import of the API", { "recordings/finalize.ts": 'import {\n  presentSession,\n  recordingUrls,\n} from "../api/present";' }, /only src\/api may import/],
    ["another entry point imports the API", { "worker.ts": 'import { apiRoutes } from "./api";' }, /only src\/api may import/],
    ["an export from the API", { "sessions/index.ts": 'export type { LiveControl } from "../api";' }, /only src\/api may import/],
    ["shapes imports the database", { "shapes/stream.ts": 'import type { StreamRecord } from "../db";' }, /src\/shapes imports nothing/],
    ["media imports database types", { "media/ladder.ts": 'import type { Profile } from "../db";' }, /src\/media imports no database types/],
    ["a file behind another folder's index", { "queue/jobTable.ts": 'import { statementCache } from "../db/connection";' }, /through its index\.ts/],
    ["a require of the API", { "webhooks/send.ts": 'const { apiRoutes } = require("../api") as typeof import("../api");' }, /only src\/api may import/],
    ["two folders import each other", { "events/index.ts": 'import "../webhooks";', "webhooks/index.ts": 'import "../events";' }, /in a circle: events -> webhooks -> events/],
  ])("flags %s", (_what, files, message) => {
    expect(layeringViolations(tree(files)).join("\n")).toMatch(message);
  });

  it("lets a folder import itself by relative path and others by their index", () => {
    const ok = tree({ "events/sink.ts": 'import type { Store } from "../db";\nimport { presentStream } from "../shapes";\nimport { x } from "./service";', "events/service.ts": "" });
    expect(layeringViolations(ok)).toEqual([]);
  });
});
