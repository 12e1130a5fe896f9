import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

// No function in src/ is longer than 120 lines: a function that long does several jobs, and the
// wiring it most often held (every area in one start()) now lives in src/wiring/, one file per area.
const LIMIT = 120;
const SRC = path.resolve(__dirname, "../../src");

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith(".ts") ? [full] : [];
  });
}

/** Each function-like node with a body: where it starts and how many lines it spans. */
function functionLengths(file: string, text: string): { at: string; lines: number }[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { at: string; lines: number }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ at: `${path.relative(SRC, file)}:${start + 1}`, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe("function length", () => {
  it("measures a function from its first to its last line", () => {
    const text = ["function f() {", "  return 1;", "}", "const g = () => {", "", "};"].join("\n");
    expect(functionLengths("x.ts", text).map((f) => f.lines)).toEqual([3, 3]);
  });

  it(`no function in src/ is over ${LIMIT} lines`, () => {
    const files = sources(SRC);
    expect(files.length).toBeGreaterThan(50);
    const long = files.flatMap((f) => functionLengths(f, fs.readFileSync(f, "utf8"))).filter((f) => f.lines > LIMIT);
    expect(long).toEqual([]);
  });
});
