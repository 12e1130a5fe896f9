// Live media benchmark: `npm run bench:live`.
//
// Measures a real onair server in this process, with real ffmpeg on both sides of it:
//   1. time to live: from the start of the pushing ffmpeg (its first RTMP byte follows within
//      milliseconds) to the stream's isActive, for a passthrough stream and for the default
//      ladder, as seconds and as a multiple of the HLS segment length;
//   2. capacity: how many concurrent 720p30 sources onair keeps live in real time with the
//      default 3-rung ladder, next to how many bare ffmpeg processes running exactly the
//      pipeline's arguments (buildLiveArgs) sustain in the same run;
//   3. the CPU that the Node process itself spends per live stream.
//
// The machines this runs on are small and noisy (and shared), so absolute capacity means little
// from one run to the next: the bare baseline is measured in the same run, each onair round right
// after the bare round with the same N, and onair is reported as a ratio of it (target 1.0).
//
// Real time, the criterion: every N sources play the same pre-encoded 720p30 clip in a loop,
// paced by `-re`, so a pipeline that keeps up produces exactly one second of HLS per second of
// wall time, and one that does not falls further behind every second. During the window the
// bench watches every variant playlist (every rendition of every stream; inotify, plus a 250 ms
// poll) and notes when each new segment (seq beyond those listed at window start) appears.
// For each rendition, the media produced (cumulative EXTINF seconds) against the wall time at
// which each segment appeared gives its rate: the least-squares slope, media seconds per wall
// second. (1 − rate) × the span of those segments is how much further behind the stream fell
// during the window. A rendition keeps real time when
//   - it fell behind by at most max(0.5 s, (1 − BENCH_REALTIME_MIN) × span): at 0.97 and a 20 s
//     window, rate >= ~0.97, i.e. less than 2 s behind per minute; the 0.5 s floor absorbs the
//     few hundred ms of jitter with which segments close, which otherwise dominates short windows;
//   - and it did not stall: its last new segment appeared at most 2 segment lengths before the
//     window ended.
// Timing the segments, rather than counting the media produced in the window, avoids the ±1
// segment quantisation (±10 % for a 20 s window of 2 s segments). Streams that plainly keep up
// measure 0.99-1.01 on 20 s windows (more than 1 while catching up on a slow start). A round
// keeps real time when every rendition of every stream does and all streams went live within
// 20 s. N grows from 1 until both sides have failed once; "max real-time N" is the largest N
// before a side's first failure (more streams can only need more CPU). The machine is shared: the "others %" column is
// the CPU that processes outside the round took meanwhile; a round that fails while they took 25 %
// of a core or more is run once more, and the second attempt decides (both are printed). Every
// round first waits (up to 20 s) for the machine to be about idle.
//
// The Node CPU of part 3 is process.cpuUsage() over the window: the server's RTMP relay, the
// pipelines' playlist scans, SQLite, and also this bench's own playlist polling. Bare rounds run
// the same polling with no server work, so their Node CPU is the floor to subtract.
//
// Settings (environment): BENCH_RUNS (default 3) time-to-live runs per kind, BENCH_MAX_STREAMS
// (default 4), BENCH_WINDOW in seconds (default 20), BENCH_SEGMENT_SECONDS (default 1, the LL-HLS default),
// BENCH_REALTIME_MIN (default 0.97); FFMPEG_PATH as for the server. Quick run: BENCH_WINDOW=8 BENCH_MAX_STREAMS=2 BENCH_RUNS=1.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig, type Config } from "../src/config";
import { createLogger } from "../src/log";
import { loadLadder, renditionLadder } from "../src/media/ladder";
import { variantDir, variantPlaylist } from "../src/media/hlsFiles";
import { parseMediaPlaylist } from "../src/media/playlists";
import { startServer, type RunningServer } from "../src/server";
import type { Profile, Rendition } from "../src/shapes";
import { bareArgs, Child, exitOnSignal, ffmpegVersion, fixed, formatTable, makeClip, median, positiveIntFromEnv, processCpuSeconds, running } from "./lib";

/** Spec: a stream that is not live 20 s after its publisher started has failed. */
const ACTIVE_TIMEOUT_MS = 20_000;
const ACTIVE_POLL_MS = 50;
const PLAYLIST_POLL_MS = 250;
/** Ending a session takes the pipeline's grace (about 2 s); more than this is a hang. */
const IDLE_TIMEOUT_MS = 10_000;
const CLIP_SECONDS = 20;
/** % of one core taken by other processes above which a failed round is run again. */
const DISTURBED_CPU = 25;
const QUIET_WAIT_MS = 20_000;
/** Falling behind by less than this over a window is jitter in when segments close, not a trend. */
const LAG_TOLERANCE_S = 0.5;
const CLIP_SIZE = "1280x720";
const CLIP_FPS = 30;

interface Settings {
  runs: number;
  maxStreams: number;
  windowSeconds: number;
  segmentSeconds: number;
  realtimeMin: number;
}

function fractionFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > 1) throw new Error(`${name} must be a number in (0, 1], got "${raw}"`);
  return n;
}

function readSettings(): Settings {
  const segmentSeconds = positiveIntFromEnv("BENCH_SEGMENT_SECONDS", 1);
  // The server accepts 1-10 s (HLS_SEGMENT_SECONDS); say so here rather than as a config error.
  if (segmentSeconds > 10) throw new Error(`BENCH_SEGMENT_SECONDS must be 1-10, got ${segmentSeconds}`);
  return {
    runs: positiveIntFromEnv("BENCH_RUNS", 3),
    maxStreams: positiveIntFromEnv("BENCH_MAX_STREAMS", 4),
    windowSeconds: positiveIntFromEnv("BENCH_WINDOW", 20),
    segmentSeconds,
    realtimeMin: fractionFromEnv("BENCH_REALTIME_MIN", 0.97),
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const seconds = (fromMs: number) => (performance.now() - fromMs) / 1000;

/** A live source: the clip, looped, paced in real time, pushed over RTMP as OBS would. */
function pushClip(ffmpeg: string, clip: string, url: string, name: string): Child {
  return new Child(name, ffmpeg, [
    "-hide_banner", "-nostdin", "-loglevel", "warning",
    "-re", "-stream_loop", "-1", "-i", clip,
    "-c", "copy", "-f", "flv", url,
  ]);
}

// ---------------------------------------------------------------------------------------------
// The server

interface Onair {
  server: RunningServer;
  config: Config;
  apiUrl: string;
  apiKey: string;
  ingestUrl: string;
}

interface BenchStream {
  id: string;
  streamKey: string;
  playbackId: string;
  renditions: Rendition[];
}

async function startOnair(dataDir: string, settings: Settings): Promise<Onair> {
  const config = loadConfig({
    DATA_DIR: dataDir,
    PORT: "0",
    RTMP_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    HLS_SEGMENT_SECONDS: String(settings.segmentSeconds),
    // The same ffmpeg for the server, the pushers and the bare baseline.
    FFMPEG_PATH: process.env.FFMPEG_PATH,
    // This bench finds how many ladders the machine really holds: no admission budget.
    TRANSCODE_BUDGET: "1000000",
    // Each round starts fresh sessions: one ends as its publisher leaves, with no reconnect window.
    RECONNECT_WINDOW_SECONDS: "0",
  });
  const server = await startServer(config, createLogger("silent"));
  const apiKey = server.firstUser?.apiKey;
  if (apiKey === undefined) {
    await server.stop();
    throw new Error(`no first user was created in ${dataDir}; the data directory was not empty`);
  }
  if (!server.ffmpeg) {
    await server.stop();
    throw new Error("the server found no ffmpeg: install it or set FFMPEG_PATH");
  }
  return { server, config, apiUrl: `http://127.0.0.1:${server.port}/api`, apiKey, ingestUrl: `rtmp://127.0.0.1:${server.rtmpPort}/live` };
}

async function createStream(o: Onair, name: string, profiles: Profile[]): Promise<BenchStream> {
  const res = await fetch(`${o.apiUrl}/stream`, {
    method: "POST",
    headers: { authorization: `Bearer ${o.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ name, profiles }),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST /api/stream returned ${res.status}: ${text}`);
  const body = JSON.parse(text) as { id?: unknown; streamKey?: unknown; playbackId?: unknown };
  if (typeof body.id !== "string" || typeof body.streamKey !== "string" || typeof body.playbackId !== "string") {
    throw new Error(`POST /api/stream returned no id, streamKey or playbackId: ${text}`);
  }
  return { id: body.id, streamKey: body.streamKey, playbackId: body.playbackId, renditions: renditionLadder(profiles, o.config.hlsSegmentSeconds) };
}

// The session manager is the only writer of isActive: its view is the database's, without a query.
const isActive = (o: Onair, s: BenchStream) => o.server.sessions.liveSession(s.id)?.isLive === true;

/** The pipeline writes `<DATA_DIR>/hls/<playbackId>/<i>/index.m3u8` (server.ts, liveArgs.ts). */
const streamPlaylist = (o: Onair, s: BenchStream, r: Rendition) => variantPlaylist(path.join(o.config.dataDir, "hls", s.playbackId), r);

/** What the server is doing with a stream: for error messages. */
function describeStream(o: Onair, s: BenchStream): string {
  const session = o.server.sessions.liveSession(s.id);
  const segments = s.renditions.map((r) => `${r.name}: ${readPlaylist(streamPlaylist(o, s, r))?.segments.length ?? "no playlist"}`).join(", ");
  return (
    `publish accepted: ${session ? "yes" : "no"}, pipeline processes running: ${o.server.processes.size}, ` +
    `segments listed per rendition: ${segments}`
  );
}

/** Every session ended and every pipeline ffmpeg gone, or an error naming what is left. */
async function waitIdle(o: Onair, after: string): Promise<void> {
  const deadline = performance.now() + IDLE_TIMEOUT_MS;
  while (o.server.sessions.liveCount > 0 || o.server.processes.size > 0) {
    if (performance.now() > deadline) {
      const pids = o.server.processes.pids();
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      throw new Error(
        `the server did not go idle within ${IDLE_TIMEOUT_MS / 1000} s ${after}: ${o.server.sessions.liveCount} sessions still live, ` +
          `pipeline pids ${pids.join(", ") || "none"} (killed)`,
      );
    }
    await sleep(50);
  }
}

// ---------------------------------------------------------------------------------------------
// Part 1: time to live

interface TimeToLive {
  publishSeconds: number;
  activeSeconds: number;
}

async function timeToLive(o: Onair, s: BenchStream, clip: string): Promise<TimeToLive> {
  const ffmpeg = o.server.ffmpeg!.path;
  const started = performance.now();
  const pusher = pushClip(ffmpeg, clip, `${o.ingestUrl}/${s.streamKey}`, "pusher");
  let publishSeconds: number | undefined;
  try {
    for (;;) {
      // The store is what GET /api/stream/{id} reads; polling it skips HTTP's noise.
      if (isActive(o, s)) return { publishSeconds: publishSeconds ?? seconds(started), activeSeconds: seconds(started) };
      if (publishSeconds === undefined && o.server.sessions.liveSession(s.id)) publishSeconds = seconds(started);
      if (!pusher.isRunning) throw new Error(`the pusher ended before the stream went active: ${pusher.describeExit()}`);
      if (performance.now() - started > ACTIVE_TIMEOUT_MS) {
        throw new Error(`stream ${s.id} (${s.renditions.length} renditions) never went active within ${ACTIVE_TIMEOUT_MS / 1000} s; ${describeStream(o, s)}`);
      }
      await sleep(ACTIVE_POLL_MS);
    }
  } finally {
    await pusher.stop();
    await waitIdle(o, "after a time-to-live run");
  }
}

// ---------------------------------------------------------------------------------------------
// Part 2 and 3: capacity

interface Output {
  playlist: string;
  baseSeq: number;
  /** New segments by seq: EXTINF seconds and when the bench first saw them listed (ms). */
  seen: Map<number, { duration: number; at: number }>;
}

interface OutputResult {
  /** Media seconds per wall second over the window (least-squares slope). */
  rate: number;
  /** Seconds further behind real time at the end of the window than at its start. */
  fellBehind: number;
  /** Longest wait for a new segment during the window, s: what a player at the live edge sits through. */
  maxGap: number;
  stalled: boolean;
  realTime: boolean;
}

interface CpuSnapshot {
  node: NodeJS.CpuUsage;
  at: number;
  machine: { busy: number; total: number } | undefined;
  perPid: Map<number, number>;
}

interface Round {
  side: "bare" | "onair";
  n: number;
  /** Seconds from the first spawn to every stream live; undefined when some never was. */
  activeSeconds: number | undefined;
  results: OutputResult[];
  realTime: boolean;
  /** % of one core, whole Node process, over the window. */
  nodeCpu: number | undefined;
  /** % of one core per stream: the transcoding ffmpeg (bare, or the server's pipeline). */
  ffmpegCpuPerStream: number | undefined;
  /** % of one core per stream: the RTMP pusher (onair only). */
  pusherCpuPerStream: number | undefined;
  /** % of all cores busy over the window, whoever used them. */
  machineBusy: number | undefined;
  /** % of one core used by processes other than this round's. */
  otherCpu: number | undefined;
  /** Resident memory of this Node process at the end of the window. */
  rssMb: number | undefined;
  notes: string[];
  /** A process died (as opposed to a slow machine): the bench fails. */
  broken: string | undefined;
  /** The second attempt of a disturbed round. */
  retry?: boolean;
}

function readPlaylist(file: string): ReturnType<typeof parseMediaPlaylist> | undefined {
  try {
    return parseMediaPlaylist(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

const hasSegment = (file: string) => (readPlaylist(file)?.segments.length ?? 0) > 0;

function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const line = fs.readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
    const t = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = t.reduce((a, b) => a + b, 0);
    const idle = (t[3] ?? 0) + (t[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}

function cpuSnapshot(pids: number[]): CpuSnapshot {
  const perPid = new Map<number, number>();
  for (const pid of pids) {
    const s = processCpuSeconds(pid);
    if (s !== undefined) perPid.set(pid, s);
  }
  return { node: process.cpuUsage(), at: performance.now(), machine: machineTicks(), perPid };
}

/** % of one core used by `pids` between two snapshots, per stream; undefined if unknown. */
function pidsCpuPerStream(start: CpuSnapshot, end: CpuSnapshot, pids: number[], n: number): number | undefined {
  const wall = (end.at - start.at) / 1000;
  let sum = 0;
  for (const pid of pids) {
    const a = start.perPid.get(pid);
    const b = end.perPid.get(pid);
    if (a === undefined || b === undefined) return undefined;
    sum += b - a;
  }
  return pids.length === 0 ? undefined : (100 * sum) / wall / n;
}

/** Waits for `ready`; a string from `problem` or the timeout ends the wait with a reason. */
async function waitReady(
  ready: () => boolean,
  problem: () => string | undefined,
  what: () => string,
): Promise<{ seconds: number } | { failed: string; broken?: string }> {
  const started = performance.now();
  for (;;) {
    if (ready()) return { seconds: seconds(started) };
    const p = problem();
    if (p) return { failed: p, broken: p };
    if (performance.now() - started > ACTIVE_TIMEOUT_MS) return { failed: `not live within ${ACTIVE_TIMEOUT_MS / 1000} s: ${what()}` };
    await sleep(ACTIVE_POLL_MS);
  }
}

function newOutput(playlist: string): Output {
  const listed = readPlaylist(playlist)?.segments ?? [];
  return { playlist, baseSeq: listed.length ? Math.max(...listed.map((s) => s.seq)) : -1, seen: new Map() };
}

function pollOutput(o: Output, now: number): void {
  for (const seg of readPlaylist(o.playlist)?.segments ?? []) {
    if (seg.seq > o.baseSeq && !o.seen.has(seg.seq)) o.seen.set(seg.seq, { duration: seg.duration, at: now });
  }
}

function judgeOutput(o: Output, windowEnd: number, settings: Settings): OutputResult {
  const segs = [...o.seen.entries()].sort((a, b) => a[0] - b[0]).map(([, s]) => s);
  const first = segs[0];
  const last = segs[segs.length - 1];
  if (!first || !last || segs.length < 2 || last.at <= first.at) {
    return { rate: 0, fellBehind: Infinity, maxGap: settings.windowSeconds, stalled: true, realTime: false };
  }
  const gaps = segs.slice(1).map((seg, i) => (seg.at - segs[i]!.at) / 1000);
  const maxGap = Math.max(...gaps, (windowEnd - last.at) / 1000);
  // Point i: when segment i appeared (s) and the media completed since segment 0 appeared (s).
  let media = 0;
  const points = segs.map((seg, i) => {
    if (i > 0) media += seg.duration;
    return { t: (seg.at - first.at) / 1000, m: media };
  });
  const tMean = points.reduce((a, p) => a + p.t, 0) / points.length;
  const mMean = points.reduce((a, p) => a + p.m, 0) / points.length;
  const rate = points.reduce((a, p) => a + (p.t - tMean) * (p.m - mMean), 0) / points.reduce((a, p) => a + (p.t - tMean) ** 2, 0);
  const span = (last.at - first.at) / 1000;
  const fellBehind = (1 - rate) * span;
  const stalled = (windowEnd - last.at) / 1000 > 2 * settings.segmentSeconds;
  return { rate, fellBehind, maxGap, stalled, realTime: !stalled && fellBehind <= Math.max(LAG_TOLERANCE_S, (1 - settings.realtimeMin) * span) };
}

/**
 * The measuring window, shared by both sides: polls every playlist, stops early on a problem
 * (a process died), and returns the per-rendition results and CPU snapshots.
 */
async function measureWindow(
  playlists: string[],
  pids: () => number[],
  problem: () => string | undefined,
  settings: Settings,
): Promise<{ results: OutputResult[]; start: CpuSnapshot; end: CpuSnapshot; rssMb: number; problem?: string }> {
  const outputs = playlists.map(newOutput);
  // ffmpeg renames each playlist into place as a segment closes: inotify timestamps that within
  // milliseconds, which keeps the rate precise on short windows; the polling below is the backup.
  const watchers: fs.FSWatcher[] = [];
  for (const dir of new Set(playlists.map((p) => path.dirname(p)))) {
    const mine = outputs.filter((o) => path.dirname(o.playlist) === dir);
    try {
      watchers.push(fs.watch(dir, () => mine.forEach((o) => pollOutput(o, performance.now()))));
    } catch {
      // polling alone
    }
  }
  const start = cpuSnapshot(pids());
  const until = start.at + settings.windowSeconds * 1000;
  let found: string | undefined;
  try {
    while (performance.now() < until) {
      await sleep(PLAYLIST_POLL_MS);
      const now = performance.now();
      for (const o of outputs) pollOutput(o, now);
      found = problem();
      if (found) break;
    }
  } finally {
    for (const w of watchers) w.close();
  }
  const end = cpuSnapshot(pids());
  const rssMb = process.memoryUsage().rss / 2 ** 20;
  return { results: outputs.map((o) => judgeOutput(o, end.at, settings)), start, end, rssMb, problem: found };
}

function finishRound(
  side: Round["side"],
  n: number,
  activeSeconds: number | undefined,
  window: Awaited<ReturnType<typeof measureWindow>> | undefined,
  cpu: { ffmpeg: number[]; pushers: number[] },
  notes: string[],
  settings: Settings,
  broken?: string,
): Round {
  if (!window) {
    return {
      side, n, activeSeconds, results: [], realTime: false, nodeCpu: undefined, ffmpegCpuPerStream: undefined,
      pusherCpuPerStream: undefined, machineBusy: undefined, otherCpu: undefined, rssMb: undefined, notes, broken,
    };
  }
  const { start, end, results } = window;
  if (window.problem) notes.push(window.problem);
  const wall = (end.at - start.at) / 1000;
  const nodeMicros = end.node.user - start.node.user + (end.node.system - start.node.system);
  const stalled = results.filter((r) => r.stalled).length;
  if (stalled > 0) notes.push(`${stalled} of ${results.length} renditions stalled (no new segment in the last ${2 * settings.segmentSeconds} s)`);
  const nodeCpu = (100 * nodeMicros) / 1e6 / wall;
  const ffmpegCpuPerStream = pidsCpuPerStream(start, end, cpu.ffmpeg, n);
  const pusherCpuPerStream = pidsCpuPerStream(start, end, cpu.pushers, n);
  const machineBusy = start.machine && end.machine ? (100 * (end.machine.busy - start.machine.busy)) / Math.max(1, end.machine.total - start.machine.total) : undefined;
  // What the rest of the machine took meanwhile (other people's work on a shared box): a round
  // with a large share here competed for the CPU and says less about onair or ffmpeg.
  const otherCpu =
    machineBusy === undefined || ffmpegCpuPerStream === undefined
      ? undefined
      : Math.max(0, machineBusy * os.cpus().length - (ffmpegCpuPerStream + (pusherCpuPerStream ?? 0)) * n - nodeCpu);
  return {
    side,
    n,
    activeSeconds,
    results,
    realTime: !window.problem && results.length > 0 && results.every((r) => r.realTime),
    nodeCpu,
    ffmpegCpuPerStream,
    pusherCpuPerStream,
    machineBusy,
    otherCpu,
    rssMb: window.rssMb,
    notes,
    broken: window.problem,
  };
}

const firstDead = (children: Child[]) => children.find((c) => !c.isRunning)?.describeExit();

/** N bare ffmpeg processes, each exactly the pipeline's arguments on a real-time-paced clip. */
async function bareRound(n: number, ffmpeg: string, clip: string, renditions: Rendition[], config: Config, workDir: string, settings: Settings): Promise<Round> {
  const outDirs = Array.from({ length: n }, (_, k) => path.join(workDir, `bare-${n}-${k}`));
  const children: Child[] = [];
  const notes: string[] = [];
  try {
    for (const [k, outDir] of outDirs.entries()) {
      for (const r of renditions) fs.mkdirSync(variantDir(outDir, r), { recursive: true });
      children.push(new Child(`bare ffmpeg ${k + 1}/${n}`, ffmpeg, bareArgs(clip, outDir, renditions, config, `bare${k}`)));
    }
    const playlists = outDirs.flatMap((d) => renditions.map((r) => variantPlaylist(d, r)));
    const ready = await waitReady(
      () => playlists.every(hasSegment),
      () => firstDead(children),
      () => `${playlists.filter(hasSegment).length} of ${playlists.length} renditions have a segment`,
    );
    if ("failed" in ready) {
      notes.push(ready.failed);
      return finishRound("bare", n, undefined, undefined, { ffmpeg: [], pushers: [] }, notes, settings, ready.broken);
    }
    const pids = children.map((c) => c.pid).filter((p): p is number => p !== undefined);
    const window = await measureWindow(playlists, () => pids, () => firstDead(children), settings);
    return finishRound("bare", n, ready.seconds, window, { ffmpeg: pids, pushers: [] }, notes, settings);
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    for (const d of outDirs) fs.rmSync(d, { recursive: true, force: true });
  }
}

/** N RTMP pushes of the clip into N streams with the default ladder. */
async function onairRound(o: Onair, n: number, streams: BenchStream[], clip: string, settings: Settings): Promise<Round> {
  const ffmpeg = o.server.ffmpeg!.path;
  const mine = streams.slice(0, n);
  const notes: string[] = [];
  const pushers: Child[] = [];
  try {
    for (const [k, s] of mine.entries()) pushers.push(pushClip(ffmpeg, clip, `${o.ingestUrl}/${s.streamKey}`, `pusher ${k + 1}/${n}`));
    const ready = await waitReady(
      () => mine.every((s) => isActive(o, s)),
      () => firstDead(pushers),
      () => mine.map((s, k) => `stream ${k + 1}: ${isActive(o, s) ? "active" : describeStream(o, s)}`).join("; "),
    );
    if ("failed" in ready) {
      notes.push(ready.failed);
      return finishRound("onair", n, undefined, undefined, { ffmpeg: [], pushers: [] }, notes, settings, ready.broken);
    }
    const pipelinePids = o.server.processes.pids();
    const pusherPids = pushers.map((c) => c.pid).filter((p): p is number => p !== undefined);
    if (pipelinePids.length !== n) notes.push(`expected ${n} pipeline processes, the server has ${pipelinePids.length}`);
    const playlists = mine.flatMap((s) => s.renditions.map((r) => streamPlaylist(o, s, r)));
    const window = await measureWindow(
      playlists,
      () => [...pipelinePids, ...pusherPids],
      () => {
        const dead = firstDead(pushers);
        if (dead) return dead;
        const down = mine.findIndex((s) => !isActive(o, s));
        return down >= 0 ? `stream ${down + 1} went inactive during the window (pipeline ended under a live publisher?)` : undefined;
      },
      settings,
    );
    return finishRound("onair", n, ready.seconds, window, { ffmpeg: pipelinePids, pushers: pusherPids }, notes, settings);
  } finally {
    await Promise.all(pushers.map((c) => c.stop()));
    await waitIdle(o, `after the onair round with ${n} streams`);
  }
}

// ---------------------------------------------------------------------------------------------
// Report

function timeToLiveTable(results: Map<string, TimeToLive[]>, settings: Settings): string {
  const seg = settings.segmentSeconds;
  const rows = [...results.entries()].map(([label, runs]) => {
    const active = runs.map((r) => r.activeSeconds);
    return [
      label,
      String(runs.length),
      fixed(median(runs.map((r) => r.publishSeconds)), 2),
      fixed(median(active), 2),
      fixed(Math.min(...active), 2),
      fixed(Math.max(...active), 2),
      fixed(median(active) / seg, 2),
    ];
  });
  return formatTable(["stream", "runs", "publish s (med)", "isActive s (med)", "min", "max", "× segment"], rows);
}

function roundsTable(rounds: Round[]): string {
  const rows = rounds.map((r) => {
    const rates = r.results.map((x) => x.rate);
    return [
      (r.side === "bare" ? "bare ffmpeg" : "onair") + (r.retry ? " (retry)" : ""),
      String(r.n),
      fixed(r.activeSeconds, 1),
      rates.length ? fixed(Math.min(...rates), 3) : "-",
      rates.length ? fixed(median(rates), 3) : "-",
      rates.length ? fixed(Math.max(...r.results.map((x) => x.fellBehind)), 2) : "-",
      rates.length ? fixed(Math.max(...r.results.map((x) => x.maxGap)), 1) : "-",
      r.realTime ? "yes" : "NO",
      fixed(r.ffmpegCpuPerStream, 0),
      fixed(r.pusherCpuPerStream, 1),
      fixed(r.nodeCpu, 1),
      fixed(r.rssMb, 0),
      fixed(r.machineBusy, 0),
      fixed(r.otherCpu, 0) + (!r.realTime && (r.otherCpu ?? 0) >= DISTURBED_CPU ? "!" : ""),
    ];
  });
  return formatTable(
    ["side", "N", "live after s", "min rate", "median rate", "fell behind s", "max gap s", "real time", "ffmpeg %/str", "pusher %/str", "node %", "node RSS MB", "machine busy %", "others %"],
    rows,
  );
}

/** Largest N before the side's first failure (rounds run in increasing N). */
function maxRealTime(rounds: Round[], side: Round["side"]): number {
  let max = 0;
  // A retried round counts by its retry: the attempt that was not disturbed.
  for (const r of rounds.filter((x, i) => x.side === side && !rounds.slice(i + 1).some((later) => later.side === side && later.n === x.n))) {
    if (!r.realTime) break;
    max = r.n;
  }
  return max;
}

/**
 * Runs a round, and once more if it failed while other processes took a large share of the CPU
 * (the machine is shared): the second attempt decides. Both are reported.
 */
async function withRetry(round: () => Promise<Round>): Promise<Round[]> {
  await waitForQuiet();
  const first = await round();
  if (first.realTime || first.broken || (first.otherCpu ?? 0) < DISTURBED_CPU) return [first];
  process.stderr.write(`    not real time while other processes took ${first.otherCpu!.toFixed(0)} % of a core: once more\n`);
  await waitForQuiet();
  return [first, { ...(await round()), retry: true }];
}

/**
 * Between rounds nothing of ours runs: waits (up to QUIET_WAIT_MS) until the machine is about
 * idle, so that a round does not start in the middle of someone else's build or test run.
 */
async function waitForQuiet(): Promise<void> {
  const started = performance.now();
  let said = false;
  for (;;) {
    const a = machineTicks();
    await sleep(1000);
    const b = machineTicks();
    if (!a || !b) return;
    const busy = (100 * os.cpus().length * (b.busy - a.busy)) / Math.max(1, b.total - a.total);
    if (busy < DISTURBED_CPU) return;
    if (performance.now() - started > QUIET_WAIT_MS) {
      process.stderr.write(`    the machine is still busy (${busy.toFixed(0)} % of a core): going ahead\n`);
      return;
    }
    if (!said) process.stderr.write(`    waiting for a quieter machine (${busy.toFixed(0)} % of a core busy)\n`);
    said = true;
  }
}

function nodeCpuTable(rounds: Round[]): string {
  const rows = rounds
    .filter((r) => r.side === "onair" && r.nodeCpu !== undefined)
    .map((r) => {
      const floor = rounds.find((b) => b.side === "bare" && b.n === r.n)?.nodeCpu;
      return [
        `${r.n}${r.retry ? " (retry)" : ""}`,
        fixed(r.nodeCpu, 1),
        fixed(r.nodeCpu! / r.n, 2),
        fixed(floor, 1),
        floor === undefined ? "-" : fixed((r.nodeCpu! - floor) / r.n, 2),
      ];
    });
  return formatTable(["N", "node % (total)", "node %/stream", "bench floor %", "server %/stream (minus floor)"], rows);
}

// ---------------------------------------------------------------------------------------------

let onairForCleanup: Onair | undefined;
const tempDirs: string[] = [];

/** Synchronous, for signals: every process this run started, killed by PID, and temp dirs removed. */
function killEverything(): void {
  for (const c of running) c.signal("SIGKILL");
  for (const pid of onairForCleanup?.server.processes.pids() ?? []) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const settings = readSettings();
  exitOnSignal(killEverything);

  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-live-"));
  tempDirs.push(workDir);
  const dataDir = path.join(workDir, "data");
  fs.mkdirSync(dataDir);
  const ladder = loadLadder("default");

  let failure: string | undefined;
  try {
    const o = await startOnair(dataDir, settings);
    onairForCleanup = o;
    const ffmpeg = o.server.ffmpeg!.path;
    const cpus = os.cpus();
    const header = [
      "",
      "onair live media benchmark",
      `  machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? "unknown"}), load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; node ${process.version}; ${ffmpegVersion(ffmpeg)} (${ffmpeg})`,
      `  settings: segment ${settings.segmentSeconds} s, list size ${o.config.hlsListSize}, BENCH_RUNS=${settings.runs}, BENCH_MAX_STREAMS=${settings.maxStreams}, ` +
        `BENCH_WINDOW=${settings.windowSeconds} s, BENCH_REALTIME_MIN=${settings.realtimeMin}`,
      `  source: ${CLIP_SIZE}@${CLIP_FPS} H.264 ultrafast 2.5 Mb/s + AAC, 1 s keyframes, ${CLIP_SECONDS} s clip looped with -re; ` +
        `ladder "default": ${ladder.map((p) => `${p.name} ${p.bitrate / 1e6} Mb/s`).join(", ")}`,
    ];
    process.stdout.write(header.join("\n") + "\n");

    process.stderr.write("making the 720p30 test clip\n");
    const clip = await makeClip(ffmpeg, workDir, { size: CLIP_SIZE, fps: CLIP_FPS, seconds: CLIP_SECONDS });

    // Part 1. Kinds alternate run by run, so both see similar machine conditions.
    const passthrough = await createStream(o, "bench passthrough", []);
    const laddered = await createStream(o, "bench ladder", ladder);
    const ttl = new Map<string, TimeToLive[]>([
      ["passthrough (no profiles)", []],
      [`default ladder (${ladder.length} rungs)`, []],
    ]);
    for (let run = 1; run <= settings.runs; run++) {
      for (const [label, s] of [...ttl.keys()].map((l, i) => [l, i === 0 ? passthrough : laddered] as const)) {
        process.stderr.write(`  time to live, ${label}, run ${run}/${settings.runs}\n`);
        ttl.get(label)!.push(await timeToLive(o, s, clip));
      }
    }
    process.stdout.write(
      [
        "",
        "1. time to live: pusher ffmpeg spawned → publish accepted → stream isActive (HLS playable)",
        "",
        timeToLiveTable(ttl, settings),
        "",
      ].join("\n"),
    );

    // Parts 2 and 3. Bare first, then onair with the same N: neighbours see similar conditions.
    const streams: BenchStream[] = [];
    for (let k = 0; k < settings.maxStreams; k++) streams.push(await createStream(o, `bench capacity ${k + 1}`, ladder));
    const renditions = renditionLadder(ladder, settings.segmentSeconds);
    const rounds: Round[] = [];
    const failed = { bare: false, onair: false };
    for (let n = 1; n <= settings.maxStreams && !(failed.bare && failed.onair); n++) {
      process.stderr.write(`  capacity, ${n} bare ffmpeg: until live, then ${settings.windowSeconds} s\n`);
      const bare = await withRetry(() => bareRound(n, ffmpeg, clip, renditions, o.config, workDir, settings));
      rounds.push(...bare);
      failed.bare ||= !bare[bare.length - 1]!.realTime;
      process.stderr.write(`  capacity, ${n} onair streams: until live, then ${settings.windowSeconds} s\n`);
      const onair = await withRetry(() => onairRound(o, n, streams, clip, settings));
      rounds.push(...onair);
      failed.onair ||= !onair[onair.length - 1]!.realTime;
    }

    const bareMax = maxRealTime(rounds, "bare");
    const onairMax = maxRealTime(rounds, "onair");
    const reachedTop = (max: number) => (max === settings.maxStreams ? "+" : "");
    const notes = rounds.flatMap((r) => r.notes.map((note) => `  ${r.side} N=${r.n}${r.retry ? " (retry)" : ""}: ${note}`));
    process.stdout.write(
      [
        "",
        `2. capacity: 720p30 sources with the default ladder (${renditions.length} renditions each), ${settings.windowSeconds} s window once all are live`,
        "   rate = media seconds produced per wall second, per rendition (min and median over all renditions of all streams);",
        "   fell behind = how much further behind real time the worst rendition was at the end of the window than at its start;",
        `   max gap = longest wait for a new segment of any rendition (a player at the live edge stalls beyond ~${settings.segmentSeconds} s);`,
        `   real time = no rendition fell behind by more than max(${LAG_TOLERANCE_S} s, ${(1 - settings.realtimeMin).toFixed(2)} × the span of the window's segments) nor stalled. CPU columns in % of one core;`,
        `   others = CPU taken meanwhile by processes outside the round (shared machine); "!": failed while others >= ${DISTURBED_CPU} %, so run again.`,
        "",
        roundsTable(rounds),
        ...(notes.length ? ["", "notes:", ...notes] : []),
        "",
        formatTable(
          ["", "bare ffmpeg", "onair", "onair / bare"],
          [["max real-time streams", `${bareMax}${reachedTop(bareMax)}`, `${onairMax}${reachedTop(onairMax)}`, bareMax > 0 ? fixed(onairMax / bareMax, 2) : "-"]],
        ),
        ...(bareMax === settings.maxStreams || onairMax === settings.maxStreams ? ["   (+: still real time at BENCH_MAX_STREAMS; raise it to find the limit)"] : []),
        "",
        "3. CPU of the Node process (server and bench) per live stream, over the onair windows; the bench floor is the",
        "   same process during the bare round with the same N (the bench's own playlist polling, no server work)",
        "",
        nodeCpuTable(rounds),
        "",
      ].join("\n"),
    );
    const broken = rounds.filter((r) => r.broken !== undefined);
    if (broken.length > 0) failure = `a process died during ${broken.map((r) => `${r.side} N=${r.n}`).join(", ")} (see the notes)`;
    else if (onairMax === 0 && bareMax > 0) failure = "onair kept no stream in real time where bare ffmpeg kept at least one";
  } finally {
    const o = onairForCleanup;
    await Promise.all([...running].map((c) => c.stop()));
    if (o) await o.server.stop();
    onairForCleanup = undefined;
    killEverything();
  }
  if (failure) throw new Error(failure);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:live failed: ${err instanceof Error ? err.message : String(err)}\n`);
  killEverything();
  process.exitCode = 1;
});
