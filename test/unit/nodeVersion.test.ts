import { execFileSync, spawnSync } from "node:child_process";
import path from "node:path";
import { unsupportedNode } from "../../src/nodeVersion";

// onair runs on Node 22.16+ (node:sqlite with what it uses), 24 and 26, and says so clearly elsewhere.

describe("unsupportedNode", () => {
  it.each([
    ["v22.16.0", undefined],
    ["v22.23.3", undefined],
    ["23.11.0", undefined],
    ["v24.0.0", undefined],
    ["v24.21.0", undefined],
    ["v25.2.1", undefined],
    ["v26.10.0", undefined],
    ["v27.0.0-pre", undefined],
    ["v20.20.2", "onair needs Node.js 22.16 or newer (the LTS lines 22, 24 or 26); this is Node.js 20.20.2, which no longer receives security fixes"],
    ["v18.20.8", "onair needs Node.js 22.16 or newer (the LTS lines 22, 24 or 26); this is Node.js 18.20.8, which no longer receives security fixes"],
    ["v21.7.3", "onair needs Node.js 22.16 or newer (the LTS lines 22, 24 or 26); this is Node.js 21.7.3, which no longer receives security fixes"],
    ["v22.12.0", "onair needs Node.js 22.16 or newer (the LTS lines 22, 24 or 26); this is Node.js 22.12.0: update to the newest 22.x"],
    ["v22.15.1", "onair needs Node.js 22.16 or newer (the LTS lines 22, 24 or 26); this is Node.js 22.15.1: update to the newest 22.x"],
    ["v23.10.0", "onair needs Node.js 22.16 or newer (the LTS lines 22, 24 or 26); this is Node.js 23.10.0: update to the newest 23.x"],
    ["banana", 'onair needs Node.js 22.16 or newer (the LTS lines 22, 24 or 26); this Node.js reports an unreadable version "banana"'],
  ])("%s → %s", (version, expected) => {
    expect(unsupportedNode(version)).toBe(expected);
  });

  it("accepts the Node running these tests", () => {
    expect(unsupportedNode(process.version)).toBeUndefined();
  });
});

describe("entry points on an unsupported Node", () => {
  const ROOT = path.resolve(__dirname, "../..");
  // The check runs before anything that needs a newer Node loads: the system's Node 20, where
  // there is one, gets the message and exit code 1 rather than a stack trace about node:sqlite.
  const old = ["/usr/bin/node", "/usr/local/bin/node"].find((bin) => {
    try {
      return unsupportedNode(execFileSync(bin, ["-v"], { encoding: "utf8" })) !== undefined;
    } catch {
      return false;
    }
  });
  (old ? it.each([["src/main.ts", "onair"], ["src/worker.ts", "onair worker"], ["src/cli/main.ts", "onair cli"]]) : it.skip.each([["", ""]]))(
    "%s refuses it with exit code 1",
    (entry, program) => {
      const run = spawnSync(old!, ["--import", "tsx", entry, "keys", "list"], { cwd: ROOT, encoding: "utf8", env: { ...process.env, DATA_DIR: "/nonexistent/onair-node-check" }, timeout: 30_000 });
      expect(run.status).toBe(1);
      expect(run.stdout).toBe("");
      expect(run.stderr.trim()).toMatch(new RegExp(`^${program}: onair needs Node\\.js 22\\.16 or newer .*this is Node\\.js \\d+\\.\\d+\\.\\d+, which no longer receives security fixes$`));
    },
  );
});
