// The report: one function per section, each reading the result, and the PASS/MISS targets.

import os from "node:os";
import { ffmpegVersion, fixed, formatTable } from "../lib";
import { metricMin, metricSum } from "./metrics";
import { judgeStream, STALL_TARGET_DURATIONS, type ReaderStats, type StreamMedia } from "./readers";
import { latencySection } from "./reportLatency";
import { resourcesSection, timelineSection } from "./reportResources";
import { cpuBetween, FLAT_SLOPE_MIB_PER_MIN, judgeMemory, type MemoryVerdict } from "./resources";
import { apiAfterWarmUp, baselineApi, type SoakResult } from "./result";
import { CLIP, SMALL_RENDITION } from "./settings";
import { latencyP, percentile } from "./stats";

const MiB = 2 ** 20;

const sumOf = (xs: ReaderStats[], f: (x: ReaderStats) => number) => xs.reduce((a, x) => a + f(x), 0);

/** One line of the targets: PASS or MISS, then what was measured. */
export const verdict = (pass: boolean, what: string) => `  ${pass ? "PASS" : "MISS"}  ${what}`;

export function headerSection(r: SoakResult): string[] {
  const { settings, o } = r;
  const cpus = os.cpus();
  const perStream = r.readerStats.map((x) => x.length);
  return [
    "",
    "onair soak benchmark",
    `  machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? "unknown"}), load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; node ${process.version}; ${ffmpegVersion(o.ffmpeg)}`,
    `  run: ${fixed((r.runEnd - r.runStart) / 60_000, 1)} min of load (SOAK_MINUTES=${settings.minutes}; the first ${r.warmupSeconds} s are warm-up, not judged), ` +
      `${settings.publishers} publishers, ${settings.readers} HLS readers (${Math.min(...perStream)}-${Math.max(...perStream)} per stream), ` +
      `API ${settings.apiRate} req/s open loop; API baseline ${settings.baselineSeconds} s before any media`,
    `  streams: ${settings.passthrough ? "passthrough (profiles: [] → one copied `source` rendition)" : `one rendition each, ${SMALL_RENDITION.name} ${SMALL_RENDITION.width}x${SMALL_RENDITION.height} ${SMALL_RENDITION.fps} fps ${SMALL_RENDITION.bitrate / 1000} kb/s (libx264 veryfast)`}; ` +
      `HLS segments ${settings.segmentSeconds} s`,
    `  source: ${CLIP.size}@${CLIP.fps} H.264 ultrafast 2.5 Mb/s + AAC, 1 s keyframes, ${CLIP.seconds} s clip looped (ffmpeg -re -stream_loop -1 -c copy)`,
    `  server: node --import tsx src/main.ts (pid ${o.pid}), embedded queue, LOG_LEVEL=warn, API_RATE_LIMIT=0; every stream live ${r.liveAfterS.toFixed(1)} s after the pushers started`,
    `  bench: its own event loop delay p99 ${fixed(r.benchLag.p99, 0)} ms, max ${fixed(r.benchLag.max, 0)} ms (the latencies it measures include it)`,
    ...(r.broken ? ["", `THE RUN ENDED EARLY: ${r.broken}`] : []),
  ];
}

export function mediaSection(r: SoakResult, judged: StreamMedia[]): string[] {
  const row = (label: string, xs: ReaderStats[], js: StreamMedia[], disconnects: number, neverListed: number) => [
    label,
    String(disconnects),
    String(js.reduce((a, j) => a + j.segments, 0)),
    fixed(Math.min(...js.map((j) => j.rate ?? NaN).filter(Number.isFinite)), 3),
    fixed(Math.max(...js.map((j) => j.maxGapS)), 1),
    String(js.reduce((a, j) => a + j.stalls.length, 0)),
    String(sumOf(xs, (x) => x.stalls)),
    fixed(Math.max(0, ...xs.map((x) => x.longestWaitS)), 1),
    String(sumOf(xs, (x) => x.segments)),
    String(sumOf(xs, (x) => x.segment404)),
    String(sumOf(xs, (x) => x.segmentErrors)),
    String(sumOf(xs, (x) => x.seqGaps) + neverListed),
    String(sumOf(xs, (x) => x.playlistErrors)),
    String(sumOf(xs, (x) => x.resets + x.endedWhileLive)),
    fixed(sumOf(xs, (x) => x.bytes) / MiB, 0),
  ];
  const rows = r.streams.map((s) => row(`stream ${s.index + 1}`, r.readerStats[s.index]!, [judged[s.index]!], s.disconnects.length, s.neverListed));
  if (r.streams.length > 1) {
    const disconnects = r.streams.reduce((a, s) => a + s.disconnects.length, 0);
    rows.push(row("all", r.readerStats.flat(), judged, disconnects, r.streams.reduce((a, s) => a + s.neverListed, 0)));
  }
  const notes = r.streams.flatMap((s) => s.disconnects.map((d) => `  stream ${s.index + 1} at ${fixed((d.at - r.runStart) / 1000, 0)} s: ${d.why}`));
  return [
    "",
    `1. media: what the readers saw (stall = no new segment for > ${STALL_TARGET_DURATIONS} × ${r.settings.segmentSeconds} s with the publisher connected)`,
    "   new segs = segments that appeared during the run; rate = media s per wall s after the warm-up (1.000 is real time; \"all\": the slowest stream);",
    "   max gap = longest wait for a new segment; reader stalls, longest wait = as each reader saw it (one stream stall shows once per reader);",
    "   dropped: 404 and errors on listed segments; gaps = segments gone from the playlist before a reader polled, or never listed at all;",
    "   resets = a playlist that started over or ended while its publisher stayed connected",
    "",
    formatTable(
      ["stream", "pub disc", "new segs", "rate", "max gap s", "stream stalls", "reader stalls", "longest wait s", "segs read", "404", "errors", "gaps", "playlist errors", "resets", "MiB read"],
      rows,
    ),
    ...(notes.length ? ["", "publisher disconnects:", ...notes] : []),
  ];
}

export function webhookSection(r: SoakResult): string[] {
  const ev = r.events;
  const names = [...ev.byEvent.keys()].sort();
  return [
    "",
    "3. webhooks (a receiver subscribed to every event, with a shared secret; delay = event createdAt to receipt)",
    "",
    formatTable(
      ["deliveries", ...names, "sessions (API)", "unmatched", "duplicates", "bad signatures", "delay p50 ms", "delay max ms"],
      [[
        String(ev.deliveries),
        ...names.map((k) => String(ev.byEvent.get(k))),
        fixed(r.after.sessionsInApi, 0),
        String(ev.unmatched.length),
        String(ev.duplicates),
        String(ev.badSignatures),
        fixed(percentile(ev.delayMs, 50), 0),
        fixed(Math.max(0, ...ev.delayMs), 0),
      ]],
    ),
    ...ev.unmatched.slice(0, 10).map((u) => `   ${u}`),
    ...(r.after.idleProblem ? [`   ${r.after.idleProblem}`] : []),
  ];
}

/** Pipeline restarts and failures during the run, from the server's counters. */
export function pipelineCounts(r: SoakResult): { restarts: number; failures: number } {
  const delta = (name: string) => (metricSum(r.metrics.end, name) ?? NaN) - (metricSum(r.metrics.live, name) ?? 0);
  return { restarts: delta("onair_pipeline_restarts_total"), failures: delta("onair_pipeline_failures_total") };
}

export function serverSection(r: SoakResult): string[] {
  const { restarts, failures } = pipelineCounts(r);
  const m = r.metrics.end;
  const a = r.after.metrics;
  const outcome = (o: string) => fixed(metricSum(a, "onair_webhook_deliveries_total", (l) => l.includes(`outcome="${o}"`)), 0);
  const logs = r.o.logs;
  const sd = r.after.shutdown;
  return [
    "",
    "6. the server's own account (/metrics, its log)",
    `  pipeline restarts ${fixed(restarts, 0)}, pipeline failures ${fixed(failures, 0)} (onair_pipeline_restarts_total, onair_pipeline_failures_total during the run)`,
    `  at the end of the run: ${fixed(metricSum(m, "onair_live_sessions"), 0)} live sessions, ${fixed(metricSum(m, "onair_ffmpeg_processes"), 0)} ffmpeg processes, ` +
      `slowest onair_transcode_speed ${fixed(metricMin(m, "onair_transcode_speed"), 3)}`,
    `  ${r.after.seconds.toFixed(0)} s after the publishers left: ${fixed(metricSum(a, "onair_live_sessions"), 0)} live sessions, ` +
      `${fixed(metricSum(a, "onair_ffmpeg_processes"), 0)} ffmpeg processes, ${fixed(r.after.stillActive, 0)} streams still isActive; ` +
      `webhook jobs delivered ${outcome("delivered")}, retried ${outcome("retry")}, failed ${outcome("failed")}`,
    `  SIGTERM at the end: ${sd ? `${sd.exit.signal ? `killed by ${sd.exit.signal}` : `exit code ${sd.exit.code}`} after ${(sd.seconds * 1000).toFixed(0)} ms` : "-"}`,
    `  server log (LOG_LEVEL=warn): ${logs.warn} warnings, ${logs.error} errors${logs.other.length ? `, ${logs.other.length} other lines` : ""}`,
    ...[...logs.messages.entries()]
      .sort((x, y) => y[1].count - x[1].count)
      .slice(0, 8)
      .map(([msg, x]) => `    ${x.count} × ${x.level} "${msg}" ${x.example}`),
    ...logs.other.slice(0, 5).map((l) => `    ${l}`),
  ];
}

export function targetsSection(r: SoakResult, judged: StreamMedia[], mem: MemoryVerdict): string[] {
  const all = r.readerStats.flat();
  const ev = r.events;
  const streamStalls = judged.reduce((a, j) => a + j.stalls.length, 0);
  const readerStalls = sumOf(all, (x) => x.stalls);
  const dropped = sumOf(all, (x) => x.segment404 + x.segmentErrors + x.seqGaps) + r.streams.reduce((a, s) => a + s.neverListed, 0);
  const disconnects = r.streams.reduce((a, s) => a + s.disconnects.length, 0);
  const { restarts, failures } = pipelineCounts(r);
  // A session the API lists must have had its stream.started (each went live) and stream.idle.
  const missingStarted = r.after.sessionsInApi !== undefined ? Math.max(0, r.after.sessionsInApi - ev.sessionsStarted) : 0;
  const base = latencyP(baselineApi(r), 99);
  const under = latencyP(apiAfterWarmUp(r), 99);
  const cpu = mem.first ? cpuBetween(mem.first, mem.last) : undefined;
  const sign = mem.growth !== undefined && mem.growth >= 0 ? "+" : "";
  return [
    "",
    "targets",
    verdict(streamStalls + readerStalls === 0, `zero stalls: ${streamStalls} stream stalls, ${readerStalls} reader stalls`),
    verdict(dropped === 0, `zero dropped segments: ${dropped}`),
    verdict(
      ev.unmatched.length + missingStarted + ev.duplicates + ev.badSignatures === 0 && ev.sessionsStarted > 0,
      `zero lost events: ${ev.sessionsStarted} sessions with stream.started (the API lists ${fixed(r.after.sessionsInApi, 0)}), ` +
        `${ev.unmatched.length} without exactly one stream.idle, ${ev.duplicates} duplicates, ${ev.badSignatures} bad signatures`,
    ),
    verdict(
      mem.flat,
      `flat memory: RSS ${sign}${fixed(mem.growth, 1)} MiB (${sign}${fixed(mem.growthPct, 1)} %) over ${fixed(mem.spanMin, 1)} min after the warm-up, slope ${fixed(mem.slope, 2)} MiB/min ` +
        `(flat: growth <= ${fixed(mem.limit, 0)} MiB and slope <= ${FLAT_SLOPE_MIB_PER_MIN} MiB/min)` +
        (mem.spanMin < 5 ? "; under 5 min of samples: too short for a trend" : ""),
    ),
    verdict(
      restarts === 0 && failures === 0 && disconnects === 0,
      `no ffmpeg restarts: ${fixed(restarts, 0)} pipeline restarts, ${fixed(failures, 0)} pipeline failures, ${disconnects} publisher disconnects`,
    ),
    `  info  API p99 under load ${fixed(under, 1)} ms = ${fixed(under !== undefined && base !== undefined ? under / base : undefined, 2)} × idle (${fixed(base, 1)} ms); ` +
      `server node CPU ${fixed(cpu?.server, 1)} % of a core = ${fixed(cpu ? cpu.server / cpu.ffmpeg : undefined, 2)} × its pipelines' ${fixed(cpu?.ffmpeg, 1)} %`,
    "",
  ];
}

export function report(r: SoakResult): string {
  const judged = r.streams.map((s) => judgeStream(s, r.warmEnd, r.runEnd, r.stallMs));
  const mem = judgeMemory(r.samples, r.runStart, r.warmEnd);
  return [
    ...headerSection(r),
    ...mediaSection(r, judged),
    ...latencySection(r),
    ...webhookSection(r),
    ...resourcesSection(r, mem),
    ...timelineSection(r, judged),
    ...serverSection(r),
    ...targetsSection(r, judged, mem),
  ].join("\n");
}
