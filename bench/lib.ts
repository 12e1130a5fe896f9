// Small pieces the benchmarks share: settings from the environment, process CPU, statistics.

import { spawnSync } from "node:child_process";
import fs from "node:fs";

/** A positive integer setting (BENCH_*), or the fallback when unset; anything else stops the bench. */
export function positiveIntFromEnv(name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0 || n > max) throw new Error(`${name} must be an integer from 1 to ${max}, got "${raw}"`);
  return n;
}

const CLK_TCK = (() => {
  const n = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout);
  return Number.isInteger(n) && n > 0 ? n : 100;
})();

/** CPU seconds (user + system) a process has used, from /proc (Linux); undefined once it is gone. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // After the command name (which may hold spaces): utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return undefined;
  }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
