import fs from "node:fs";
import path from "node:path";

// A unit test is named after the file it tests: test/unit/<path under src/>/<file>.test.ts for
// src/<path>/<file>.ts, test/unit/public/<file>.test.ts for public/<file>.js, and
// test/unit/helpers/<file>.test.ts for a test helper (test/helpers/<file>.ts). Whoever looks for
// the tests of a file finds them at one place, and a test's name says what it covers.

const ROOT = path.resolve(__dirname, "../..");
const UNIT = path.join(ROOT, "test/unit");

/** Unit tests about the project as a whole, with the reason. */
const WHOLE_PROJECT = new Map<string, string>([
  ["layering.test.ts", "checks the module layering of all of src/"],
  ["testNames.test.ts", "checks the names of all of test/unit/"],
  ["functionLength.test.ts", "checks the length of every function in src/"],
]);

function testFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return testFiles(full);
    return e.name.endsWith(".test.ts") ? [path.relative(UNIT, full).split(path.sep).join("/")] : [];
  });
}

/** The files a unit test at `rel` (relative to test/unit/) may be named after. */
function sourcesFor(rel: string): string[] {
  const base = rel.replace(/\.test\.ts$/, "");
  if (base.startsWith("public/")) return [`public/${base.slice("public/".length)}.js`];
  if (base.startsWith("helpers/")) return [`test/helpers/${base.slice("helpers/".length)}.ts`];
  return [`src/${base}.ts`];
}

describe("unit test names", () => {
  it("maps a test's path onto the source file it tests", () => {
    expect(sourcesFor("hls/boxes.test.ts")).toEqual(["src/hls/boxes.ts"]);
    expect(sourcesFor("public/latencyTarget.test.ts")).toEqual(["public/latencyTarget.js"]);
    expect(sourcesFor("helpers/rtmpClient.test.ts")).toEqual(["test/helpers/rtmpClient.ts"]);
  });

  it("every unit test is named after a source file, or is listed as a whole-project test", () => {
    const files = testFiles(UNIT);
    expect(files.length).toBeGreaterThan(WHOLE_PROJECT.size);
    const unnamed = files.filter((f) => !WHOLE_PROJECT.has(f) && !sourcesFor(f).some((s) => fs.existsSync(path.join(ROOT, s))));
    expect(unnamed).toEqual([]);
  });

  it("lists no whole-project test that is gone", () => {
    const present = new Set(testFiles(UNIT));
    const stale = [...WHOLE_PROJECT.keys()].filter((f) => !present.has(f));
    expect(stale).toEqual([]);
  });
});
