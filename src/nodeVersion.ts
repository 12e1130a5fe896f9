// The Node.js versions onair runs on. node:sqlite (src/db/sqlite.ts) has everything onair uses
// (statement columns, transaction state, the busy timeout option) from 22.16 on the 22 line and
// from 23.11 on; the LTS lines 22, 24 and 26 are the supported ones. Nothing here may import
// more than Node itself: entry points run it before loading anything that needs a newer Node.

/** The oldest release of each line that has what onair needs. */
const MINIMUM: readonly (readonly [major: number, minor: number])[] = [
  [22, 16],
  [23, 11],
];

/** Why onair cannot run on Node `version` ("v20.20.2" or "20.20.2"), or undefined if it can. */
export function unsupportedNode(version: string): string | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  const needs = "onair needs Node.js 22.16 or newer (the LTS lines 22, 24 or 26)";
  if (!m) return `${needs}; this Node.js reports an unreadable version "${version}"`;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  const shown = `${m[1]}.${m[2]}.${m[3]}`;
  if (major >= 24) return undefined;
  const line = MINIMUM.find(([mj]) => mj === major);
  if (line && minor >= line[1]) return undefined;
  if (line) return `${needs}; this is Node.js ${shown}: update to the newest ${major}.x`;
  return `${needs}; this is Node.js ${shown}, which no longer receives security fixes`;
}

/** Ends the process (exit code 1, the reason on stderr) on a Node onair cannot run on. */
export function exitOnUnsupportedNode(program: string, version = process.version): void {
  const problem = unsupportedNode(version);
  if (!problem) return;
  process.stderr.write(`${program}: ${problem}\n`);
  process.exit(1);
}
