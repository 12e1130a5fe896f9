// The server's resources from /proc (Linux), every SAMPLE_MS: its RSS and open descriptors, its
// ffmpeg pipelines, and CPU of the server, the pipelines, the pushers, this bench and the machine;
// and whether its memory stayed flat.

import fs from "node:fs";
import os from "node:os";
import { processCpuSeconds, processStat } from "../lib";
import { now } from "./runState";
import type { Onair } from "./server";
import { slope } from "./stats";
import type { SoakStream } from "./streams";

/** Flat memory: RSS growth after the warm-up within this (MiB or % of start, whichever is larger)… */
const FLAT_GROWTH_MIB = 10;
const FLAT_GROWTH_PCT = 5;
/** …and a trend below this many MiB per minute (60 MiB an hour would be a leak). */
export const FLAT_SLOPE_MIB_PER_MIN = 1;

/** PIDs whose parent is `pid` (the server's ffmpeg pipelines). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    if (processStat(Number(name))?.ppid === pid) out.push(Number(name));
  }
  return out;
}

/** The process's command name (`ffmpeg`, `node`, …). */
function commandName(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return undefined;
  }
}

function rssMiB(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

function openFds(pid: number): number | undefined {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

function machineTicks(): { busy: number; total: number } {
  const line = fs.readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
  const t = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = t.reduce((a, b) => a + b, 0);
  return { busy: total - (t[3] ?? 0) - (t[4] ?? 0), total };
}

export interface Sample {
  at: number;
  rssMiB: number | undefined;
  fds: number | undefined;
  /** CPU seconds so far. */
  serverCpu: number;
  /** Of the server's children (its ffmpeg processes), live and exited. */
  ffmpegCpu: number;
  ffmpegRssMiB: number;
  ffmpegCount: number;
  /** Children of the server that are not ffmpeg (the registry knows only ffmpeg), as "name pid". */
  otherChildren: string[];
  pusherCpu: number;
  benchCpu: number;
  machine: { busy: number; total: number };
}

export function takeSample(o: Onair, streams: SoakStream[]): Sample {
  const server = processStat(o.pid);
  const kids = childPids(o.pid);
  let ffmpegCpu = server?.reapedChildrenCpu ?? 0;
  let ffmpegRss = 0;
  let ffmpegCount = 0;
  const otherChildren: string[] = [];
  for (const pid of kids) {
    const name = commandName(pid);
    if (name !== "ffmpeg") {
      otherChildren.push(`${name ?? "?"} ${pid}`);
      continue;
    }
    ffmpegCount++;
    ffmpegCpu += processStat(pid)?.cpu ?? 0;
    ffmpegRss += rssMiB(pid) ?? 0;
  }
  // This bench's children: the pushers, live and exited (the clip maker's share cancels out in deltas).
  const self = processStat(process.pid);
  let pusherCpu = self?.reapedChildrenCpu ?? 0;
  for (const s of streams) if (s.publisher?.isRunning && s.publisher.pid) pusherCpu += processCpuSeconds(s.publisher.pid) ?? 0;
  return {
    at: now(),
    rssMiB: rssMiB(o.pid),
    fds: openFds(o.pid),
    serverCpu: server?.cpu ?? 0,
    ffmpegCpu,
    ffmpegRssMiB: ffmpegRss,
    ffmpegCount,
    otherChildren,
    pusherCpu,
    benchCpu: self?.cpu ?? 0,
    machine: machineTicks(),
  };
}

export interface CpuShare {
  server: number;
  ffmpeg: number;
  pushers: number;
  bench: number;
  machine: number;
  others: number;
}

/** % of one core each took between two samples. */
export function cpuBetween(a: Sample, b: Sample): CpuShare {
  const wall = (b.at - a.at) / 1000;
  const pct = (x: number) => (100 * x) / wall;
  const server = pct(b.serverCpu - a.serverCpu);
  const ffmpeg = pct(b.ffmpegCpu - a.ffmpegCpu);
  const pushers = pct(b.pusherCpu - a.pusherCpu);
  const bench = pct(b.benchCpu - a.benchCpu);
  const machine = (100 * os.cpus().length * (b.machine.busy - a.machine.busy)) / Math.max(1, b.machine.total - a.machine.total);
  return { server, ffmpeg, pushers, bench, machine, others: Math.max(0, machine - server - ffmpeg - pushers - bench) };
}

export interface MemoryVerdict {
  first: Sample | undefined;
  last: Sample;
  growth: number | undefined;
  growthPct: number | undefined;
  slope: number | undefined;
  /** Minutes of samples after the warm-up. */
  spanMin: number;
  limit: number;
  flat: boolean;
}

/** RSS growth and slope over the samples after the warm-up (minutes since `runStart`), and whether that is flat. */
export function judgeMemory(samples: Sample[], runStart: number, warmEnd: number): MemoryVerdict {
  const judged = samples.filter((x) => x.at >= warmEnd);
  const first = judged[0];
  const last = samples[samples.length - 1]!;
  const points = judged.filter((x) => x.rssMiB !== undefined).map((x) => ({ x: (x.at - runStart) / 60_000, y: x.rssMiB! }));
  const s = slope(points);
  const growth = first?.rssMiB !== undefined && last.rssMiB !== undefined ? last.rssMiB - first.rssMiB : undefined;
  const limit = Math.max(FLAT_GROWTH_MIB, ((first?.rssMiB ?? 0) * FLAT_GROWTH_PCT) / 100);
  return {
    first,
    last,
    growth,
    growthPct: growth !== undefined && first?.rssMiB ? (100 * growth) / first.rssMiB : undefined,
    slope: s,
    spanMin: first ? (last.at - first.at) / 60_000 : 0,
    limit,
    flat: growth !== undefined && s !== undefined && growth <= limit && s <= FLAT_SLOPE_MIB_PER_MIN,
  };
}
