// Report sections 4 and 5: the server's memory, descriptors and CPU, and the run minute by minute.

import { fixed, formatTable } from "../lib";
import type { StreamMedia } from "./readers";
import { cpuBetween, type CpuShare, type MemoryVerdict, type Sample } from "./resources";
import type { SoakResult } from "./result";
import { SAMPLE_MS, SETTLE_MS } from "./settings";
import { latencyP, slope } from "./stats";

export function resourcesSection(r: SoakResult, mem: MemoryVerdict): string[] {
  const { first, last } = mem;
  const settled = r.after.settled;
  const judged = r.samples.filter((x) => x.at >= r.warmEnd);
  const fdSlope = slope(judged.filter((x) => x.fds !== undefined).map((x) => ({ x: (x.at - r.runStart) / 60_000, y: x.fds! })));
  const perPipeline = (x: Sample | undefined) => (x && x.ffmpegCount > 0 ? x.ffmpegRssMiB / x.ffmpegCount : undefined);
  const diff = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined ? b - a : undefined);
  const cpuRun = first ? cpuBetween(first, last) : undefined;
  const cpuBase = cpuBetween(r.baseline.start, r.baseline.end);
  // Each with the minutes since every stream went live when it was first and last seen.
  const seen = new Map<string, { from: number; to: number }>();
  for (const x of [r.baseline.start, r.baseline.end, ...r.samples, ...(settled ? [settled] : [])]) {
    for (const c of x.otherChildren) seen.set(c, { from: seen.get(c)?.from ?? x.at, to: x.at });
  }
  const minute = (t: number) => fixed((t - r.runStart) / 60_000, 1);
  const otherChildren = [...seen.entries()].map(([c, t]) => `${c} (seen from ${minute(t.from)} to ${minute(t.to)} min)`);
  const cpuRow = (label: string, c: CpuShare, streams: number | undefined) => [
    label,
    fixed(c.server, 1),
    fixed(c.ffmpeg, 1),
    streams ? fixed(c.ffmpeg / streams, 1) : "-",
    streams ? fixed(c.server / c.ffmpeg, 2) : "-",
    fixed(c.pushers, 1),
    fixed(c.bench, 1),
    fixed(c.machine, 0),
    fixed(c.others, 0),
  ];
  return [
    "",
    `4. resources of the server (sampled every ${SAMPLE_MS / 1000} s; run start = the first sample after the warm-up; fds = open file descriptors)`,
    "",
    formatTable(
      ["", "idle (baseline)", "run start", "run end", "growth", "growth %", "slope /min", "max", `${SETTLE_MS / 1000} s after publishers left`],
      [
        ["server RSS MiB", fixed(r.baseline.end.rssMiB, 1), fixed(first?.rssMiB, 1), fixed(last.rssMiB, 1), fixed(mem.growth, 1), fixed(mem.growthPct, 1), fixed(mem.slope, 2), fixed(Math.max(...r.samples.map((x) => x.rssMiB ?? 0)), 1), fixed(settled?.rssMiB, 1)],
        ["server open fds", fixed(r.baseline.end.fds, 0), fixed(first?.fds, 0), fixed(last.fds, 0), fixed(diff(first?.fds, last.fds), 0), "-", fixed(fdSlope, 2), fixed(Math.max(...r.samples.map((x) => x.fds ?? 0)), 0), fixed(settled?.fds, 0)],
        ["ffmpeg RSS MiB / pipeline", "-", fixed(perPipeline(first), 1), fixed(perPipeline(last), 1), fixed(diff(perPipeline(first), perPipeline(last)), 1), "-", "-", "-", `${settled?.ffmpegCount ?? "-"} running`],
      ],
    ),
    ...(otherChildren.length ? [`   other children of the server (not ffmpeg; in no column above): ${otherChildren.join(", ")}`] : []),
    "",
    "   CPU, % of one core (/proc): server = its Node process; ffmpeg = its pipelines; others = processes outside this run (a shared machine)",
    "",
    formatTable(
      ["", "server node", "ffmpeg (all)", "ffmpeg / stream", "node / ffmpeg", "pushers", "bench", "machine busy", "others"],
      [cpuRow("API baseline (no media)", cpuBase, undefined), ...(cpuRun ? [cpuRow("soak (after warm-up)", cpuRun, r.settings.publishers)] : [])],
    ),
  ];
}

export function timelineSection(r: SoakResult, judged: StreamMedia[]): string[] {
  const periodMs = Math.max(60_000, Math.ceil((r.settings.minutes * 60_000) / 10 / SAMPLE_MS) * SAMPLE_MS);
  const atOrBefore = <T extends { at: number }>(xs: T[], t: number) => [...xs].reverse().find((x) => x.at <= t + 1000) ?? xs[0]!;
  const rows: string[][] = [];
  for (let from = r.runStart; from < r.runEnd - 1000; from += periodMs) {
    const to = Math.min(from + periodMs, r.runEnd);
    const a = atOrBefore(r.samples, from);
    const b = atOrBefore(r.samples, to);
    const ca = atOrBefore(r.counters, from);
    const cb = atOrBefore(r.counters, to);
    const cpu = b.at > a.at ? cpuBetween(a, b) : undefined;
    const apiHere = r.load.samples.filter((x) => x.at >= from && x.at < to);
    rows.push([
      `${fixed((from - r.runStart) / 60_000, 0)}-${fixed((to - r.runStart) / 60_000, 0)}${from < r.warmEnd ? " (warm-up)" : ""}`,
      fixed(b.rssMiB, 1),
      fixed(b.fds, 0),
      fixed(cpu?.server, 1),
      fixed(cpu?.ffmpeg, 1),
      fixed(cpu?.others, 0),
      String(apiHere.length),
      fixed(latencyP(apiHere, 99), 1),
      fixed(Math.max(...r.o.loopDelays.filter((x) => x.at > from + 1000 && x.at <= to + 1000).map((x) => x.p99)), 1),
      fixed(latencyP(r.readerLog.segmentLatencies.filter((x) => x.at >= from && x.at < to), 99), 1),
      String(cb.segments - ca.segments),
      String(cb.dropped - ca.dropped),
      String(judged.reduce((n, j) => n + j.stalls.filter((x) => x.at >= from && x.at < to).length, 0)),
      String(r.readerLog.stallStarts.filter((x) => x >= from && x < to).length),
    ]);
  }
  return [
    "",
    "5. timeline (minutes since every stream went live; RSS and fds at the end of each period; loop p99 = the server's worst event loop reading)",
    "",
    formatTable(["min", "RSS MiB", "fds", "node %", "ffmpeg %", "others %", "API reqs", "API p99 ms", "loop p99 ms", "seg p99 ms", "segs read", "dropped", "stream stalls", "reader stalls"], rows),
  ];
}
