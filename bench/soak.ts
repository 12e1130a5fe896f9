// Soak benchmark: `npm run bench:soak`.
//
// A real onair server in its own process (`node --import tsx src/main.ts`, as `npm start` runs it,
// on a throwaway DATA_DIR and free ports) under a steady load for SOAK_MINUTES, for what only
// shows over time:
//   - SOAK_PUBLISHERS RTMP publishers, each live on its own stream for the whole run: ffmpeg
//     pushing a pre-encoded clip in a loop (`-re -stream_loop -1 -c copy`), which costs the
//     pusher almost nothing;
//   - SOAK_READERS HLS readers spread evenly over the streams, each doing what a player does: the
//     master playlist once, then its media playlist every half target duration and every new
//     segment, read to the end;
//   - SOAK_API_RATE API requests a second, open loop (each at its own time, whether or not the
//     previous ones have answered): GET /api/stream/{id}, GET /api/stream, GET /api/session in
//     9:5:5, and one PATCH /api/stream/{id} (a new name) in 20;
//   - a webhook receiver subscribed to every event, with a shared secret.
//
// What it reports, and the targets (PASS/MISS lines at the end):
//   - dropped segments (target 0): a listed segment a reader could not fetch (404, another status,
//     a network error), or one that left the playlist before the reader saw it (a media sequence
//     gap between two polls);
//   - stalls (target 0): no new segment for more than 3 target durations while the stream's
//     publisher was connected. A stream stall: no reader saw one (the server stopped producing);
//     a reader stall: this reader did not (it could also be slow answers to that reader);
//   - lost events (target 0): after the publishers stop, every session's stream.started has its
//     stream.idle, and no event arrived twice (same event id) or with a bad signature;
//   - memory (target flat): the server's RSS (/proc/<pid>/status VmRSS) every 10 s. Start is the
//     first sample after the warm-up (10 % of the run, at most 1 min: JIT, caches, SQLite pages),
//     growth is end minus start, slope the least-squares fit of every sample after the warm-up.
//     Also its open file descriptors (a leaked socket or file shows there first) and the
//     pipelines' RSS;
//   - ffmpeg restarts (target 0): onair_pipeline_restarts_total and onair_pipeline_failures_total
//     from /metrics, and publisher disconnects (a pusher that exited on its own: it is started
//     again after 1 s, as OBS reconnects, and its streams' stalls during the reconnect do not count);
//   - API latency p50/p99 under the load, next to the same request mix against the same server
//     before any media (SOAK_BASELINE_SECONDS, measured first in the same run: the machines are
//     small, noisy and shared, so the ratio is what compares across runs);
//   - the server's event loop delay, from a 10-line probe the bench preloads into the server
//     (`--import`; src/ is unchanged): it tells a blocked server from a busy machine;
//   - CPU from /proc: the server's Node process next to its ffmpeg pipelines, the pushers, this
//     bench, and "others" (processes outside the bench: a shared machine).
// The exit status is non-zero only when the bench itself broke (no server, the server died, a
// stream never went live), never for a missed target.
//
// Profiles: 2 cores cannot transcode five 720p ladders in real time (see bench:live). By default
// every stream has one small rendition, 240p at 15 fps and 300 kb/s, so the pipeline still
// decodes, scales and encodes (about 12 % of a core per stream here, against 2 % for a copy);
// SOAK_PROFILE=passthrough creates the streams with `profiles: []`, which the API serves as one
// copied `source` rendition. The source is 640x360@30 H.264 ultrafast 2.5 Mb/s with 1 s keyframes
// and AAC (bench/lib makeClip), a 20 s clip.
//
// The server runs with LOG_LEVEL=warn (its warnings and errors are tallied in the report),
// API_RATE_LIMIT=0 (the API load is not throttled), the embedded queue (REDIS_URL unset) and
// MAX_LIVE_STREAMS_PER_USER raised to SOAK_PUBLISHERS when that is above the default 10.
//
// Settings (environment): SOAK_MINUTES (10), SOAK_PUBLISHERS (5), SOAK_READERS (50),
// SOAK_API_RATE (20 requests/s), SOAK_BASELINE_SECONDS (15), SOAK_SEGMENT_SECONDS (2),
// SOAK_PROFILE (240p15 or passthrough); FFMPEG_PATH as for the server. Quick run: SOAK_MINUTES=1.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseMediaPlaylist } from "../src/media/playlists";
import { verifySignature } from "../src/webhooks";
import { startReceiver, type Receiver } from "../test/helpers/receiver";
import { Child, type Exit, ffmpegVersion, fixed, formatTable, makeClip, median, positiveIntFromEnv, processCpuSeconds, running } from "./lib";

const ROOT = path.resolve(__dirname, "..");
const SAMPLE_MS = 10_000;
/** A stream or reader without a new segment for longer than this many target durations stalled. */
const STALL_TARGET_DURATIONS = 3;
const WARMUP_FRACTION = 0.1;
const WARMUP_MAX_S = 60;
/** Not counted: JIT and connections of the API baseline. */
const BASELINE_WARMUP_S = 2;
const STARTUP_TIMEOUT_MS = 60_000;
/** Spec: a stream that is not live 20 s after its publisher started has failed; a margin for a busy box. */
const LIVE_TIMEOUT_MS = 30_000;
/** After the publishers stop: every stream.idle, every isActive false. */
const IDLE_TIMEOUT_MS = 30_000;
/** Between the publishers leaving and the last memory sample: what the server gives back. */
const SETTLE_MS = 10_000;
const RECONNECT_DELAY_MS = 1000;
const SERVER_STOP_GRACE_MS = 10_000;
const REQUEST_TIMEOUT_MS = 10_000;
/** Open-loop API load: beyond this many unanswered requests, new ones are not sent but counted. */
const API_MAX_IN_FLIGHT = 200;
const CLIP = { size: "640x360", fps: 30, seconds: 20 };
const SMALL_RENDITION = { name: "240p", bitrate: 300_000, fps: 15, width: 426, height: 240 };
/** Flat memory: RSS growth after the warm-up within this (MiB or % of start, whichever is larger)… */
const FLAT_GROWTH_MIB = 10;
const FLAT_GROWTH_PCT = 5;
/** …and a trend below this many MiB per minute (60 MiB an hour would be a leak). */
const FLAT_SLOPE_MIB_PER_MIN = 1;
const SECRET = "soak-bench-secret";

/**
 * Preloaded into the server (`node --import <this file>`), from the bench's temp dir: the server's
 * own event loop delay, printed on stdout every SAMPLE_MS. It tells a slow server (a blocked
 * loop) from a slow machine; src/ is left as it is.
 */
const PROBE_PREFIX = "soak-probe ";
const EVENT_LOOP_PROBE = `import { monitorEventLoopDelay } from "node:perf_hooks";
const h = monitorEventLoopDelay({ resolution: 10 });
h.enable();
// The histogram records each 10 ms timer's whole interval: the delay is what exceeds it.
const late = (ns) => Math.max(0, ns / 1e6 - 10);
setInterval(() => {
  process.stdout.write(${JSON.stringify(PROBE_PREFIX)} + JSON.stringify({ p50: late(h.percentile(50)), p99: late(h.percentile(99)), max: late(h.max) }) + "\\n");
  h.reset();
}, ${SAMPLE_MS}).unref();
`;

interface Settings {
  minutes: number;
  publishers: number;
  readers: number;
  apiRate: number;
  baselineSeconds: number;
  segmentSeconds: number;
  passthrough: boolean;
}

function readSettings(): Settings {
  const segmentSeconds = positiveIntFromEnv("SOAK_SEGMENT_SECONDS", 2, 10);
  const profile = process.env.SOAK_PROFILE || "240p15";
  if (profile !== "240p15" && profile !== "passthrough") throw new Error(`SOAK_PROFILE must be 240p15 or passthrough, got "${profile}"`);
  return {
    minutes: positiveIntFromEnv("SOAK_MINUTES", 10),
    publishers: positiveIntFromEnv("SOAK_PUBLISHERS", 5, 100),
    readers: positiveIntFromEnv("SOAK_READERS", 50, 5000),
    apiRate: positiveIntFromEnv("SOAK_API_RATE", 20, 1000),
    baselineSeconds: positiveIntFromEnv("SOAK_BASELINE_SECONDS", 15),
    segmentSeconds,
    passthrough: profile === "passthrough",
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const now = () => performance.now();
const MiB = 2 ** 20;

/** Set when the publishers leave or the bench is interrupted: no more reconnects, no more load. */
let stopping = false;
/** Set at the end of the soak period: the readers stop (the publishers are still connected). */
let readersDone = false;

/** A sleep that ends early when `over()` turns true (by default: the bench is stopping). */
async function pause(ms: number, over: () => boolean = () => stopping): Promise<void> {
  const until = now() + ms;
  while (!over() && now() < until) await sleep(Math.min(250, until - now()));
}

// ---------------------------------------------------------------------------------------------
// Processes this bench starts (the server and the pushers), tracked by PID until they exit.


// ---------------------------------------------------------------------------------------------
// /proc

interface ProcStat {
  ppid: number;
  /** CPU seconds of the process itself. */
  cpu: number;
  /** CPU seconds of its children that have exited and been waited for. */
  reapedChildrenCpu: number;
}

const CLK_TCK = (() => {
  const n = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout);
  return Number.isInteger(n) && n > 0 ? n : 100;
})();

function procStat(pid: number): ProcStat | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // After the command name (which may hold spaces): ppid is field 4, utime..cstime 14-17.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return {
      ppid: Number(f[1]),
      cpu: (Number(f[11]) + Number(f[12])) / CLK_TCK,
      reapedChildrenCpu: (Number(f[13]) + Number(f[14])) / CLK_TCK,
    };
  } catch {
    return undefined;
  }
}

/** PIDs whose parent is `pid` (the server's ffmpeg pipelines). */
function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    if (procStat(Number(name))?.ppid === pid) out.push(Number(name));
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

// ---------------------------------------------------------------------------------------------
// HTTP: two keep-alive agents, so that readers and the API load do not queue behind each other.

const apiAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const hlsAgent = new http.Agent({ keepAlive: true });

interface HttpResult {
  status: number;
  body: Buffer;
  ms: number;
}

function request(agent: http.Agent, url: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<HttpResult> {
  const started = now();
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent, method: opts.method ?? "GET", headers: opts.headers, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), ms: now() - started }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end(opts.body);
  });
}

// ---------------------------------------------------------------------------------------------
// The server

interface LogTally {
  warn: number;
  error: number;
  /** By message: count and the first line's fields, cut short. */
  messages: Map<string, { level: string; count: number; example: string }>;
  /** Lines that are not pino JSON (a crash's stack trace, a warning of Node). */
  other: string[];
}

/** One reading of the server's event loop delay (ms) over the SAMPLE_MS before `at`. */
interface LoopDelay {
  at: number;
  p50: number;
  p99: number;
  max: number;
}

interface Onair {
  child: Child;
  loopDelays: LoopDelay[];
  pid: number;
  baseUrl: string;
  apiUrl: string;
  rtmpUrl: string;
  apiKey: string;
  ffmpeg: string;
  dataDir: string;
  logs: LogTally;
}

function tallyLogLine(logs: LogTally, line: string): void {
  let entry: { level?: number; msg?: string; [k: string]: unknown };
  try {
    entry = JSON.parse(line) as typeof entry;
  } catch {
    if (line.trim() && logs.other.length < 20) logs.other.push(line.slice(0, 300));
    return;
  }
  const level = (entry.level ?? 0) >= 50 ? "error" : "warn";
  logs[level]++;
  const msg = String(entry.msg ?? "(no msg)");
  const seen = logs.messages.get(msg);
  if (seen) seen.count++;
  else {
    const { level: _l, time: _t, pid: _p, hostname: _h, service: _s, msg: _m, ...fields } = entry;
    logs.messages.set(msg, { level, count: 1, example: JSON.stringify(fields).slice(0, 300) });
  }
}

async function startOnair(workDir: string, dataDir: string, settings: Settings): Promise<Onair> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: "0",
    RTMP_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    HLS_SEGMENT_SECONDS: String(settings.segmentSeconds),
    API_RATE_LIMIT: "0",
    MAX_LIVE_STREAMS_PER_USER: String(Math.max(10, settings.publishers)),
    // The defaults of a single node, whatever this shell has set.
    REDIS_URL: "",
    PUBLIC_URL: "",
    RTMP_PUBLIC_URL: "",
  };
  const logs: LogTally = { warn: 0, error: 0, messages: new Map(), other: [] };
  const probe = path.join(workDir, "event-loop-probe.mjs");
  fs.writeFileSync(probe, EVENT_LOOP_PROBE);
  let banner = "";
  const loopDelays: LoopDelay[] = [];
  const child = new Child("onair server", process.execPath, ["--import", "tsx", "--import", probe, "src/main.ts"], {
    cwd: ROOT,
    env,
    onStdout: (line) => {
      if (!line.startsWith(PROBE_PREFIX)) banner += line + "\n";
      else loopDelays.push({ at: now(), ...(JSON.parse(line.slice(PROBE_PREFIX.length)) as Omit<LoopDelay, "at">) });
    },
    onStderr: (line) => tallyLogLine(logs, line),
  });
  const started = now();
  for (;;) {
    const key = /API key:\s+(\S+)/.exec(banner)?.[1];
    const api = /API:\s+(http:\/\/\S+)/.exec(banner)?.[1];
    const rtmp = /RTMP ingest:\s+rtmp:\/\/[^:/]+:(\d+)\//.exec(banner)?.[1];
    const ffmpeg = /ffmpeg:\s+(.+)$/m.exec(banner)?.[1];
    if (key && api && rtmp && ffmpeg) {
      const ffmpegPath = /^(\S+) \(from /.exec(ffmpeg)?.[1];
      if (!ffmpegPath) throw new Error(`the server found no ffmpeg (${ffmpeg}): install it or set FFMPEG_PATH`);
      return {
        child,
        loopDelays,
        pid: child.pid!,
        baseUrl: api.replace(/\/api\/?$/, ""),
        apiUrl: api.replace(/\/$/, ""),
        rtmpUrl: `rtmp://127.0.0.1:${rtmp}/live`,
        apiKey: key,
        ffmpeg: ffmpegPath,
        dataDir,
        logs,
      };
    }
    if (!child.isRunning) throw new Error(`the server did not start: ${child.describeExit()}`);
    if (now() - started > STARTUP_TIMEOUT_MS) throw new Error(`no start-up banner with an API key within ${STARTUP_TIMEOUT_MS / 1000} s; stdout so far: ${banner.slice(0, 500)}`);
    await sleep(100);
  }
}

async function api(o: Onair, method: string, pathname: string, body?: unknown): Promise<HttpResult> {
  const headers: Record<string, string> = { authorization: `Bearer ${o.apiKey}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  return request(apiAgent, `${o.apiUrl}${pathname}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

async function apiJson<T>(o: Onair, method: string, pathname: string, expect: number, body?: unknown): Promise<T> {
  const res = await api(o, method, pathname, body);
  if (res.status !== expect) throw new Error(`${method} /api${pathname} returned ${res.status}: ${res.body.toString("utf8").slice(0, 300)}`);
  return JSON.parse(res.body.toString("utf8")) as T;
}

/** The sum of a metric's samples (every label set) in prom-client's text, or undefined if absent. */
function metricSum(text: string, name: string, pick: (labels: string) => boolean = () => true): number | undefined {
  let sum: number | undefined;
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name || !pick(m[2] ?? "")) continue;
    sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

/** The smallest of a gauge's samples. */
function metricMin(text: string, name: string): number | undefined {
  const values = text
    .split("\n")
    .map((line) => /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && m[1] === name)
    .map((m) => Number(m[3]));
  return values.length ? Math.min(...values) : undefined;
}

async function scrapeMetrics(o: Onair): Promise<string> {
  const res = await request(apiAgent, `${o.baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics returned ${res.status}`);
  return res.body.toString("utf8");
}

// ---------------------------------------------------------------------------------------------
// Streams and publishers

interface SoakStream {
  index: number;
  id: string;
  streamKey: string;
  playbackId: string;
  publisher: Child | undefined;
  /** When the first pusher started (ms). */
  firstConnect: number | undefined;
  /** When a pusher exited on its own (ms), with why: publisher disconnects. */
  disconnects: { at: number; why: string }[];
  /** Segment arrivals as the readers together saw them, by session (segment name prefix). */
  epochs: Map<string, Epoch>;
  /** Segments that no reader ever saw listed (the playlist jumped past them). */
  neverListed: number;
}

interface Epoch {
  maxSeq: number;
  /** When each new segment was first seen listed by any reader; the first entry is the first look. */
  arrivals: { seq: number; at: number; duration: number }[];
}

function startPublisher(o: Onair, s: SoakStream, clip: string): void {
  const child = new Child(`pusher ${s.index + 1}`, o.ffmpeg, [
    "-hide_banner", "-nostdin", "-loglevel", "warning",
    "-re", "-stream_loop", "-1", "-i", clip,
    "-c", "copy", "-f", "flv", `${o.rtmpUrl}/${s.streamKey}`,
  ]);
  s.publisher = child;
  s.firstConnect ??= child.startedAt;
  void child.exited.then(() => {
    if (stopping || s.publisher !== child) return;
    // The server (or the connection) dropped the publisher: note it and reconnect, as OBS does.
    s.disconnects.push({ at: now(), why: child.describeExit() });
    setTimeout(() => {
      if (!stopping) startPublisher(o, s, clip);
    }, RECONNECT_DELAY_MS);
  });
}

/**
 * The stream's publisher was connected from `from` to `to`: it had connected by then and no
 * disconnect falls in between (nor just before, while it reconnects).
 */
function publisherUpThroughout(s: SoakStream, from: number, to: number): boolean {
  return s.firstConnect !== undefined && s.firstConnect <= from && !s.disconnects.some((d) => d.at >= from - RECONNECT_DELAY_MS && d.at <= to);
}

async function waitAllLive(o: Onair, streams: SoakStream[]): Promise<number> {
  const started = now();
  for (;;) {
    const states = await Promise.all(streams.map((s) => apiJson<{ isActive: boolean }>(o, "GET", `/stream/${s.id}`, 200)));
    if (states.every((x) => x.isActive)) return (now() - started) / 1000;
    const dead = streams.find((s) => s.publisher && !s.publisher.isRunning);
    if (dead && dead.disconnects.length > 2) throw new Error(`stream ${dead.index + 1} cannot go live: ${dead.publisher!.describeExit()}`);
    if (!o.child.isRunning) throw new Error(o.child.describeExit());
    if (now() - started > LIVE_TIMEOUT_MS) {
      throw new Error(`not every stream went live within ${LIVE_TIMEOUT_MS / 1000} s: ${states.map((x, i) => `${i + 1}: ${x.isActive ? "live" : "not live"}`).join(", ")}`);
    }
    await sleep(250);
  }
}

// ---------------------------------------------------------------------------------------------
// HLS readers

interface ReaderStats {
  playlistErrors: number;
  segments: number;
  bytes: number;
  segment404: number;
  segmentErrors: number;
  /** Segments that left the playlist between two polls before this reader saw them. */
  seqGaps: number;
  stalls: number;
  /** Longest time without a new segment while the publisher was connected, s. */
  longestWaitS: number;
  /** The playlist started over (a new session) or ended (#EXT-X-ENDLIST) under a live publisher. */
  resets: number;
  endedWhileLive: number;
}

const newReaderStats = (): ReaderStats => ({
  playlistErrors: 0, segments: 0, bytes: 0, segment404: 0, segmentErrors: 0,
  seqGaps: 0, stalls: 0, longestWaitS: 0, resets: 0, endedWhileLive: 0,
});

/** Every reader's stall, with when it began: for the timeline. */
const readerStallStarts: number[] = [];
const playlistLatencies: { at: number; ms: number }[] = [];
const segmentLatencies: { at: number; ms: number }[] = [];

const targetDurationOf = (text: string) => Number(/^#EXT-X-TARGETDURATION:(\d+(?:\.\d+)?)/m.exec(text)?.[1]) || undefined;
const epochOf = (uri: string) => uri.replace(/_?\d+\.ts$/, "");

/** What one look at a stream's playlist adds to its record of arrivals (shared by its readers). */
function noteListing(s: SoakStream, segs: { uri: string; seq: number; duration: number }[], at: number): void {
  const newest = segs[segs.length - 1];
  if (!newest) return;
  const key = epochOf(newest.uri);
  let e = s.epochs.get(key);
  if (!e) {
    // The first look at this session: what is listed already is history, its times unknown.
    s.epochs.set(key, { maxSeq: newest.seq, arrivals: [{ seq: newest.seq, at, duration: 0 }] });
    return;
  }
  for (const seg of segs) {
    if (seg.seq <= e.maxSeq || epochOf(seg.uri) !== key) continue;
    if (seg.seq > e.maxSeq + 1) s.neverListed += seg.seq - e.maxSeq - 1;
    e.maxSeq = seg.seq;
    e.arrivals.push({ seq: seg.seq, at, duration: seg.duration });
  }
}

async function runReader(o: Onair, s: SoakStream, stats: ReaderStats, stallMsDefault: number): Promise<void> {
  const masterUrl = `${o.baseUrl}/hls/${s.playbackId}/index.m3u8`;
  let mediaUrl: string | undefined;
  let lastSeq = -1;
  let lastEpoch = "";
  let newestSeq = -1;
  let lastAdvance = now();
  let stalled = false;
  let pollMs = stallMsDefault / STALL_TARGET_DURATIONS / 2;
  let stallMs = stallMsDefault;
  const over = () => stopping || readersDone;
  // Readers join at different moments, as viewers do.
  await pause(Math.random() * pollMs, over);
  while (!over()) {
    const tick = now();
    try {
      if (!mediaUrl) {
        const master = await request(hlsAgent, masterUrl);
        const uri = master.status === 200 ? master.body.toString("utf8").split("\n").find((l) => l.trim() && !l.startsWith("#")) : undefined;
        if (!uri) stats.playlistErrors++;
        else mediaUrl = new URL(uri.trim(), masterUrl).toString();
      }
      if (mediaUrl) {
        const res = await request(hlsAgent, mediaUrl);
        playlistLatencies.push({ at: tick, ms: res.ms });
        if (res.status !== 200) stats.playlistErrors++;
        else {
          const text = res.body.toString("utf8");
          const td = targetDurationOf(text);
          if (td) {
            pollMs = (td * 1000) / 2;
            stallMs = td * 1000 * STALL_TARGET_DURATIONS;
          }
          const list = parseMediaPlaylist(text);
          const segs = list.segments;
          const newest = segs[segs.length - 1];
          if (list.ended && s.publisher?.isRunning && publisherUpThroughout(s, tick - stallMs, tick)) stats.endedWhileLive++;
          if (newest) {
            const epoch = epochOf(newest.uri);
            if (lastSeq >= 0 && (epoch !== lastEpoch || newest.seq < lastSeq)) {
              stats.resets++;
              lastSeq = -1;
            }
            lastEpoch = epoch;
            // A player starts near the live edge: the first look fetches the newest segment only.
            if (lastSeq < 0) lastSeq = newest.seq - 1;
            const fresh = segs.filter((x) => x.seq > lastSeq);
            if (fresh[0] && fresh[0].seq > lastSeq + 1) stats.seqGaps += fresh[0].seq - lastSeq - 1;
            noteListing(s, segs, tick);
            for (const seg of fresh) {
              if (over()) break;
              try {
                const got = await request(hlsAgent, new URL(seg.uri, mediaUrl).toString());
                segmentLatencies.push({ at: now(), ms: got.ms });
                if (got.status === 200) {
                  stats.segments++;
                  stats.bytes += got.body.length;
                } else if (got.status === 404) stats.segment404++;
                else stats.segmentErrors++;
              } catch {
                stats.segmentErrors++;
              }
              lastSeq = seg.seq;
            }
            if (newest.seq !== newestSeq) {
              const t = now();
              if (newest.seq > newestSeq && newestSeq >= 0 && publisherUpThroughout(s, lastAdvance, t)) {
                stats.longestWaitS = Math.max(stats.longestWaitS, (t - lastAdvance) / 1000);
              }
              newestSeq = newest.seq;
              lastAdvance = t;
              stalled = false;
            }
          }
        }
      }
    } catch {
      stats.playlistErrors++;
    }
    const t = now();
    // A stall: nothing new for 3 target durations while the publisher stayed connected.
    if (!stalled && t - lastAdvance > stallMs && s.publisher?.isRunning && publisherUpThroughout(s, lastAdvance, t)) {
      stalled = true;
      stats.stalls++;
      readerStallStarts.push(lastAdvance);
    }
    if (stalled && publisherUpThroughout(s, lastAdvance, t)) stats.longestWaitS = Math.max(stats.longestWaitS, (t - lastAdvance) / 1000);
    await pause(Math.max(0, tick + pollMs - now()), over);
  }
}

interface StreamMedia {
  stalls: { at: number; seconds: number }[];
  maxGapS: number;
  /** Media seconds per wall second after the warm-up (1: real time). */
  rate: number | undefined;
  segments: number;
}

/** Stream stalls, longest gap and real-time rate, from the readers' shared record of arrivals. */
function judgeStream(s: SoakStream, warmEnd: number, runEnd: number, stallMs: number): StreamMedia {
  const stalls: { at: number; seconds: number }[] = [];
  let maxGap = 0;
  let rate: number | undefined;
  let segments = 0;
  let longest = 0;
  const epochs = [...s.epochs.values()];
  for (const [i, e] of epochs.entries()) {
    const a = e.arrivals.filter((x) => x.at <= runEnd);
    segments += Math.max(0, a.length - 1);
    // Only the last session runs until the end of the soak; earlier ones ended with a disconnect.
    const times = [...a.map((x) => x.at), ...(i === epochs.length - 1 ? [runEnd] : [])];
    for (let k = 1; k < times.length; k++) {
      const from = times[k - 1]!;
      const to = times[k]!;
      if (!publisherUpThroughout(s, from, to)) continue;
      maxGap = Math.max(maxGap, (to - from) / 1000);
      if (to - from > stallMs) stalls.push({ at: from, seconds: (to - from) / 1000 });
    }
    const after = a.slice(1).filter((x) => x.at >= warmEnd);
    if (after.length > longest && after.length >= 3) {
      longest = after.length;
      const media = after.slice(1).reduce((sum, x) => sum + x.duration, 0);
      rate = media / ((after[after.length - 1]!.at - after[0]!.at) / 1000);
    }
  }
  return { stalls, maxGapS: maxGap, rate, segments };
}

// ---------------------------------------------------------------------------------------------
// API load

type ApiKind = "GET /api/stream/{id}" | "GET /api/stream" | "GET /api/session" | "PATCH /api/stream/{id}";
const API_KINDS: ApiKind[] = ["GET /api/stream/{id}", "GET /api/stream", "GET /api/session", "PATCH /api/stream/{id}"];
/** Every 20 requests: 9 × GET one stream, 5 × list streams, 5 × list sessions, 1 × PATCH. */
const API_CYCLE: ApiKind[] = (() => {
  const [get, list, sessions, patch] = API_KINDS as [ApiKind, ApiKind, ApiKind, ApiKind];
  return [get, list, get, sessions, get, list, get, sessions, get, list, get, sessions, get, list, get, sessions, get, list, sessions, patch];
})();

interface ApiSample {
  at: number;
  kind: ApiKind;
  ms: number;
  ok: boolean;
}

interface ApiLoad {
  samples: ApiSample[];
  /** Slots not sent: too many unanswered requests, or this bench fell more than 1 s behind. */
  notSent: number;
  errors: string[];
  done: Promise<void>;
  stop(): void;
}

function startApiLoad(o: Onair, streams: SoakStream[], rate: number): ApiLoad {
  let halted = false;
  const load: ApiLoad = { samples: [], notSent: 0, errors: [], done: Promise.resolve(), stop: () => (halted = true) };
  const one = async (i: number) => {
    const kind = API_CYCLE[i % API_CYCLE.length]!;
    const s = streams[Math.floor(i / API_CYCLE.length) % streams.length]!;
    const at = now();
    const call =
      kind === "GET /api/stream/{id}" ? api(o, "GET", `/stream/${s.id}`)
      : kind === "GET /api/stream" ? api(o, "GET", "/stream")
      : kind === "GET /api/session" ? api(o, "GET", "/session")
      : api(o, "PATCH", `/stream/${s.id}`, { name: `soak ${s.index + 1} #${i}` });
    try {
      const res = await call;
      const ok = kind === "PATCH /api/stream/{id}" ? res.status === 204 : res.status === 200;
      if (!ok && load.errors.length < 10) load.errors.push(`${kind}: ${res.status} ${res.body.toString("utf8").slice(0, 200)}`);
      load.samples.push({ at, kind, ms: res.ms, ok });
    } catch (err) {
      if (load.errors.length < 10) load.errors.push(`${kind}: ${err instanceof Error ? err.message : String(err)}`);
      load.samples.push({ at, kind, ms: now() - at, ok: false });
    }
  };
  load.done = (async () => {
    const inFlight = new Set<Promise<void>>();
    const start = now();
    for (let i = 0; !halted && !stopping; i++) {
      const due = start + (i * 1000) / rate;
      const wait = due - now();
      if (wait > 0) await sleep(wait);
      else if (wait < -1000) {
        load.notSent++;
        continue;
      }
      if (halted || stopping) break;
      if (inFlight.size >= API_MAX_IN_FLIGHT) {
        load.notSent++;
        continue;
      }
      const p: Promise<void> = one(i).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await Promise.all(inFlight);
  })();
  return load;
}

// ---------------------------------------------------------------------------------------------
// Sampling: memory, descriptors and CPU every SAMPLE_MS

interface Sample {
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

function takeSample(o: Onair, streams: SoakStream[]): Sample {
  const server = procStat(o.pid);
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
    ffmpegCpu += procStat(pid)?.cpu ?? 0;
    ffmpegRss += rssMiB(pid) ?? 0;
  }
  // This bench's children: the pushers, live and exited (the clip maker's share cancels out in deltas).
  const self = procStat(process.pid);
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

interface CpuShare {
  server: number;
  ffmpeg: number;
  pushers: number;
  bench: number;
  machine: number;
  others: number;
}

/** % of one core each took between two samples. */
function cpuBetween(a: Sample, b: Sample): CpuShare {
  const wall = (b.at - a.at) / 1000;
  const pct = (x: number) => (100 * x) / wall;
  const server = pct(b.serverCpu - a.serverCpu);
  const ffmpeg = pct(b.ffmpegCpu - a.ffmpegCpu);
  const pushers = pct(b.pusherCpu - a.pusherCpu);
  const bench = pct(b.benchCpu - a.benchCpu);
  const machine = (100 * os.cpus().length * (b.machine.busy - a.machine.busy)) / Math.max(1, b.machine.total - a.machine.total);
  return { server, ffmpeg, pushers, bench, machine, others: Math.max(0, machine - server - ffmpeg - pushers - bench) };
}

/** Least-squares slope of y over x. */
function slope(points: { x: number; y: number }[]): number | undefined {
  if (points.length < 2) return undefined;
  const mx = points.reduce((s, p) => s + p.x, 0) / points.length;
  const my = points.reduce((s, p) => s + p.y, 0) / points.length;
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return den > 0 ? points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0) / den : undefined;
}

function percentile(values: number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

// ---------------------------------------------------------------------------------------------
// Webhooks

interface EventsVerdict {
  byEvent: Map<string, number>;
  deliveries: number;
  duplicates: number;
  badSignatures: number;
  sessionsStarted: number;
  /** Sessions with stream.started but no stream.idle, or the other way round, or either twice. */
  unmatched: string[];
  delayMs: number[];
}

function judgeEvents(receiver: Receiver): EventsVerdict {
  const byEvent = new Map<string, number>();
  const ids = new Set<string>();
  let duplicates = 0;
  let badSignatures = 0;
  const perSession = new Map<string, { started: number; idle: number }>();
  const delayMs: number[] = [];
  for (const r of receiver.received) {
    const body = r.body as { id?: string; event?: string; createdAt?: number; payload?: { sessionId?: string } } | undefined;
    const event = body?.event ?? "(unreadable)";
    byEvent.set(event, (byEvent.get(event) ?? 0) + 1);
    if (body?.id !== undefined) {
      if (ids.has(body.id)) duplicates++;
      ids.add(body.id);
    }
    const header = r.headers["livepeer-signature"];
    if (typeof header !== "string" || !verifySignature(r.raw, header, SECRET)) badSignatures++;
    if (typeof body?.createdAt === "number") delayMs.push(performance.timeOrigin + r.at - body.createdAt);
    const sessionId = body?.payload?.sessionId;
    if (sessionId && (event === "stream.started" || event === "stream.idle")) {
      const x = perSession.get(sessionId) ?? { started: 0, idle: 0 };
      if (event === "stream.started") x.started++;
      else x.idle++;
      perSession.set(sessionId, x);
    }
  }
  const unmatched = [...perSession.entries()]
    .filter(([, x]) => x.started !== 1 || x.idle !== 1)
    .map(([id, x]) => `session ${id.slice(0, 8)}: ${x.started} × stream.started, ${x.idle} × stream.idle`);
  const sessionsStarted = [...perSession.values()].filter((x) => x.started > 0).length;
  return { byEvent, deliveries: receiver.received.length, duplicates, badSignatures, sessionsStarted, unmatched, delayMs };
}

/** Every session that started has ended, each event once: what the bench waits for at the end. */
const allSessionsMatched = (r: Receiver) => {
  const v = judgeEvents(r);
  return v.sessionsStarted > 0 && v.unmatched.length === 0;
};

// ---------------------------------------------------------------------------------------------
// Report



const verdict = (pass: boolean, what: string) => `  ${pass ? "PASS" : "MISS"}  ${what}`;

// ---------------------------------------------------------------------------------------------

let onairForCleanup: Onair | undefined;
let receiverForCleanup: Receiver | undefined;
const tempDirs: string[] = [];
let cleaning: Promise<void> | undefined;

/**
 * Stops everything this run started, by PID: the pushers (SIGINT, then SIGKILL), the server
 * (SIGTERM, which stops its pipelines, then SIGKILL), any pipeline the server left behind (only
 * a process whose command line names this run's data directory), then removes the temp dir.
 */
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    stopping = true;
    const o = onairForCleanup;
    const pipelines = o ? childPids(o.pid) : [];
    await Promise.all([...running].filter((c) => c !== o?.child).map((c) => c.stop(3000)));
    if (o) await o.child.stop(SERVER_STOP_GRACE_MS, "SIGTERM");
    for (const pid of pipelines) {
      try {
        if (o && fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(o.dataDir)) process.kill(pid, "SIGKILL");
      } catch {
        // gone, as it should be
      }
    }
    await receiverForCleanup?.close();
    apiAgent.destroy();
    hlsAgent.destroy();
    for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
  })();
  return cleaning;
}

interface Counters {
  at: number;
  segments: number;
  dropped: number;
}

/** Everything a soak measured: plain data, for the report. */
interface SoakResult {
  settings: Settings;
  o: Onair;
  warmupSeconds: number;
  liveAfterS: number;
  runStart: number;
  warmEnd: number;
  runEnd: number;
  stallMs: number;
  streams: SoakStream[];
  /** By stream index. */
  readerStats: ReaderStats[][];
  baseline: { load: ApiLoad; from: number; start: Sample; end: Sample; metricsFrom: string; metricsTo: string };
  load: ApiLoad;
  samples: Sample[];
  counters: Counters[];
  /** /metrics when every stream went live, at the end of the warm-up, at the end of the run. */
  metrics: { live: string; warm: string; end: string };
  /** After the publishers left. */
  after: {
    seconds: number;
    settled?: Sample;
    metrics: string;
    stillActive?: number;
    sessionsInApi?: number;
    idleProblem?: string;
    /** SIGTERM to the server at the end: how it exited and how long it took. */
    shutdown?: { exit: Exit; seconds: number };
  };
  events: EventsVerdict;
  benchLag: { p99: number; max: number };
  /** The run ended early because the server died. */
  broken?: string;
}

async function runSoak(settings: Settings): Promise<SoakResult | undefined> {
  const runSeconds = settings.minutes * 60;
  const warmupSeconds = Math.min(WARMUP_MAX_S, Math.round(runSeconds * WARMUP_FRACTION));
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-soak-"));
  tempDirs.push(workDir);
  const dataDir = path.join(workDir, "data");
  fs.mkdirSync(dataDir);
  const loopLag = monitorEventLoopDelay({ resolution: 20 });
  loopLag.enable();

  process.stderr.write("starting the server\n");
  const o = await startOnair(workDir, dataDir, settings);
  onairForCleanup = o;
  const serverDied = () => (o.child.isRunning ? undefined : o.child.describeExit());

  process.stderr.write("making the 360p30 test clip\n");
  const clip = await makeClip(o.ffmpeg, workDir, CLIP);

  const receiver = await startReceiver(() => 204);
  receiverForCleanup = receiver;
  await apiJson(o, "POST", "/webhook", 200, { name: "soak", url: receiver.url, sharedSecret: SECRET });

  const profiles = settings.passthrough ? [] : [SMALL_RENDITION];
  const streams: SoakStream[] = [];
  for (let k = 0; k < settings.publishers; k++) {
    const s = await apiJson<{ id: string; streamKey: string; playbackId: string }>(o, "POST", "/stream", 201, { name: `soak ${k + 1}`, profiles });
    streams.push({ index: k, id: s.id, streamKey: s.streamKey, playbackId: s.playbackId, publisher: undefined, firstConnect: undefined, disconnects: [], epochs: new Map(), neverListed: 0 });
  }

  // Baseline: the same API mix against the same server, before any media.
  process.stderr.write(`API baseline: ${settings.apiRate} req/s for ${BASELINE_WARMUP_S} + ${settings.baselineSeconds} s, no media\n`);
  const baselineLoad = startApiLoad(o, streams, settings.apiRate);
  await pause(BASELINE_WARMUP_S * 1000);
  const baselineFrom = now();
  const baselineMetricsFrom = await scrapeMetrics(o);
  const baselineStart = takeSample(o, streams);
  await pause(settings.baselineSeconds * 1000);
  baselineLoad.stop();
  await baselineLoad.done;
  const baselineEnd = takeSample(o, streams);
  const baselineMetricsTo = await scrapeMetrics(o);
  if (stopping) return undefined;

  process.stderr.write(`${settings.publishers} publishers: until every stream is live\n`);
  for (const s of streams) startPublisher(o, s, clip);
  const liveAfterS = await waitAllLive(o, streams);
  const metricsLive = await scrapeMetrics(o);

  const runStart = now();
  const warmEnd = runStart + warmupSeconds * 1000;
  const runUntil = runStart + runSeconds * 1000;
  const stallMs = settings.segmentSeconds * 1000 * STALL_TARGET_DURATIONS;
  process.stderr.write(
    `soak: ${settings.minutes} min (warm-up ${warmupSeconds} s), ${settings.readers} readers, ${settings.apiRate} API req/s; ` +
      `every stream live after ${liveAfterS.toFixed(1)} s\n`,
  );
  const readerStats = streams.map(() => [] as ReaderStats[]);
  const readers: Promise<void>[] = [];
  for (let r = 0; r < settings.readers; r++) {
    const s = streams[r % streams.length]!;
    const stats = newReaderStats();
    readerStats[s.index]!.push(stats);
    readers.push(runReader(o, s, stats, stallMs));
  }
  const load = startApiLoad(o, streams, settings.apiRate);
  // The server's own request timings from the end of the warm-up, as the bench's are.
  const metricsWarm = pause(warmupSeconds * 1000).then(() => (stopping ? "" : scrapeMetrics(o).catch(() => "")));
  const samples: Sample[] = [takeSample(o, streams)];
  const countNow = (): Counters => {
    const all = readerStats.flat();
    return { at: now(), segments: all.reduce((a, x) => a + x.segments, 0), dropped: all.reduce((a, x) => a + x.segment404 + x.segmentErrors + x.seqGaps, 0) };
  };
  const counters = [countNow()];
  let broken: string | undefined;
  let lastProgress = now();
  while (!stopping && now() < runUntil) {
    await pause(Math.min(SAMPLE_MS, runUntil - now()));
    samples.push(takeSample(o, streams));
    counters.push(countNow());
    broken = serverDied();
    if (broken) break;
    if (now() - lastProgress >= 60_000) {
      lastProgress = now();
      const last = samples[samples.length - 1]!;
      const c = counters[counters.length - 1]!;
      process.stderr.write(
        `  ${((now() - runStart) / 60_000).toFixed(1)} min: server RSS ${fixed(last.rssMiB, 0)} MiB, ${last.fds} fds; ${c.segments} segments read, ` +
          `${c.dropped} dropped, ${readerStallStarts.length} reader stalls; ${load.samples.length} API requests\n`,
      );
    }
  }
  const runEnd = now();
  const metricsEnd = broken ? "" : await scrapeMetrics(o).catch(() => "");

  // The end of the run: API load and readers first, then the publishers leave.
  load.stop();
  readersDone = true;
  await Promise.all([load.done, ...readers]);
  const warm = await metricsWarm;
  // The readers' keep-alive connections would count as the server's open descriptors.
  hlsAgent.destroy();
  if (cleaning) return undefined;

  process.stderr.write("publishers leave: waiting for every stream.idle\n");
  stopping = true; // no reconnects from here
  const stoppedAt = now();
  await Promise.all(streams.map((s) => s.publisher?.stop(3000)));
  const after: SoakResult["after"] = { seconds: 0, metrics: "" };
  try {
    if (!broken) await receiver.waitFor(() => allSessionsMatched(receiver), "stream.idle of every started session", IDLE_TIMEOUT_MS);
  } catch (err) {
    after.idleProblem = err instanceof Error ? err.message : String(err);
  }
  if (!broken && o.child.isRunning) {
    const deadline = now() + IDLE_TIMEOUT_MS;
    for (;;) {
      const states = await Promise.all(streams.map((s) => apiJson<{ isActive: boolean }>(o, "GET", `/stream/${s.id}`, 200)));
      after.stillActive = states.filter((x) => x.isActive).length;
      if (after.stillActive === 0 || now() > deadline) break;
      await sleep(500);
    }
    after.sessionsInApi = (await apiJson<unknown[]>(o, "GET", "/session?limit=1000", 200)).length;
    await sleep(Math.max(0, stoppedAt + SETTLE_MS - now()));
    after.settled = takeSample(o, streams);
    after.metrics = await scrapeMetrics(o).catch(() => "");
  }
  after.seconds = (now() - stoppedAt) / 1000;
  // Whether the server died by itself, before it is asked to stop.
  broken ??= serverDied();
  if (!broken) {
    const t = now();
    const exit = await o.child.stop(SERVER_STOP_GRACE_MS, "SIGTERM");
    after.shutdown = { exit, seconds: (now() - t) / 1000 };
  }
  const benchLag = { p99: loopLag.percentile(99) / 1e6, max: loopLag.max / 1e6 };
  loopLag.disable();
  return {
    settings,
    o,
    warmupSeconds,
    liveAfterS,
    runStart,
    warmEnd,
    runEnd,
    stallMs,
    streams,
    readerStats,
    baseline: { load: baselineLoad, from: baselineFrom, start: baselineStart, end: baselineEnd, metricsFrom: baselineMetricsFrom, metricsTo: baselineMetricsTo },
    load,
    samples,
    counters,
    metrics: { live: metricsLive, warm, end: metricsEnd },
    after,
    events: judgeEvents(receiver),
    benchLag,
    broken,
  };
}

// ---------------------------------------------------------------------------------------------
// The report: one function per section, each reading the result.

const sumOf = (xs: ReaderStats[], f: (x: ReaderStats) => number) => xs.reduce((a, x) => a + f(x), 0);
const latencyP = (xs: { ms: number }[], q: number) => percentile(xs.map((x) => x.ms), q);
const within = <T extends { at: number }>(xs: T[], from: number, to: number) => xs.filter((x) => x.at >= from && x.at <= to);
const apiAfterWarmUp = (r: SoakResult) => within(r.load.samples, r.warmEnd, r.runEnd);
const baselineApi = (r: SoakResult) => r.baseline.load.samples.filter((x) => x.at >= r.baseline.from);

function headerSection(r: SoakResult): string[] {
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

function mediaSection(r: SoakResult, judged: StreamMedia[]): string[] {
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

/** Request counts by histogram bucket (upper bound in s) of the routes `pick` keeps, `to` minus `from`. */
function serverBuckets(from: string, to: string, pick: (labels: string) => boolean): Map<number, number> {
  const read = (text: string) => {
    const buckets = new Map<number, number>();
    for (const line of text.split("\n")) {
      const m = /^onair_http_request_duration_seconds_bucket\{([^}]*)\}\s+(\S+)/.exec(line);
      if (!m || !pick(m[1]!)) continue;
      const le = /le="([^"]+)"/.exec(m[1]!)?.[1];
      const bound = le === "+Inf" ? Infinity : Number(le);
      buckets.set(bound, (buckets.get(bound) ?? 0) + Number(m[2]));
    }
    return buckets;
  };
  const a = read(from);
  const b = read(to);
  return new Map([...b.entries()].map(([le, n]) => [le, n - (a.get(le) ?? 0)]));
}

/** "≤ 25": the smallest bucket bound (ms) holding 99 % of the requests; ">10000" past the last. */
function serverP99(buckets: Map<number, number>): string {
  const total = buckets.get(Infinity) ?? 0;
  if (total <= 0) return "-";
  for (const [le, n] of [...buckets.entries()].sort((x, y) => x[0] - y[0])) {
    if (n >= 0.99 * total) return Number.isFinite(le) ? `<=${le * 1000}` : `>${Math.max(...[...buckets.keys()].filter(Number.isFinite)) * 1000}`;
  }
  return "-";
}

const ROUTES: Record<ApiKind, { method: string; route: string }> = {
  "GET /api/stream/{id}": { method: "GET", route: "/api/stream/:id" },
  "GET /api/stream": { method: "GET", route: "/api/stream" },
  "GET /api/session": { method: "GET", route: "/api/session" },
  "PATCH /api/stream/{id}": { method: "PATCH", route: "/api/stream/:id" },
};
const routeIs = (method: string, route: string) => (labels: string) => labels.includes(`method="${method}"`) && labels.includes(`route="${route}"`);
const anyApiRoute = (labels: string) => API_KINDS.some((k) => routeIs(ROUTES[k].method, ROUTES[k].route)(labels));
const hlsRoute = (labels: string) => /route="\/hls\//.test(labels);

function latencySection(r: SoakResult): string[] {
  const base = baselineApi(r);
  const under = apiAfterWarmUp(r);
  const serverIdle = (pick: (l: string) => boolean) => serverP99(serverBuckets(r.baseline.metricsFrom, r.baseline.metricsTo, pick));
  const serverLoad = (pick: (l: string) => boolean) => (r.metrics.warm && r.metrics.end ? serverP99(serverBuckets(r.metrics.warm, r.metrics.end, pick)) : "-");
  const row = (label: string, idle: ApiSample[] | undefined, load: { ms: number; ok?: boolean }[], pick: (l: string) => boolean) => {
    const i99 = idle ? latencyP(idle, 99) : undefined;
    const l99 = latencyP(load, 99);
    return [
      label,
      idle ? String(idle.length) : "-",
      idle ? fixed(latencyP(idle, 50), 1) : "-",
      idle ? fixed(i99, 1) : "-",
      idle ? serverIdle(pick) : "-",
      String(load.length),
      fixed(latencyP(load, 50), 1),
      fixed(l99, 1),
      fixed(Math.max(0, ...load.map((x) => x.ms)), 0),
      serverLoad(pick),
      String(load.filter((x) => x.ok === false).length + (idle?.filter((x) => !x.ok).length ?? 0)),
      i99 !== undefined && l99 !== undefined ? fixed(l99 / i99, 2) : "-",
    ];
  };
  const errors = [...r.baseline.load.errors, ...r.load.errors];
  const notSent = r.baseline.load.notSent + r.load.notSent;
  // Readings cover the SAMPLE_MS before they arrive.
  const loopIdle = r.o.loopDelays.filter((x) => x.at > r.baseline.from + SAMPLE_MS && x.at <= r.baseline.end.at + 1000);
  const loopLoad = within(r.o.loopDelays, r.warmEnd + SAMPLE_MS, r.runEnd + 1000);
  const loopRow = (label: string, xs: LoopDelay[]) => [
    label,
    String(xs.length),
    fixed(median(xs.map((x) => x.p50)), 1),
    fixed(median(xs.map((x) => x.p99)), 1),
    fixed(Math.max(...xs.map((x) => x.p99)), 1),
    fixed(Math.max(...xs.map((x) => x.max)), 1),
  ];
  return [
    "",
    "2. latency, ms: idle server (baseline, no media) vs under the soak load after the warm-up",
    "   p50/p99/max: from this bench, request sent to last byte read; server p99: the server's own onair_http_request_duration_seconds",
    "   over the same window (middleware to response finished; a bucket bound, so \"<=25\" means between the bucket below and 25 ms)",
    "",
    formatTable(
      ["request", "idle n", "idle p50", "idle p99", "idle server p99", "load n", "load p50", "load p99", "load max", "load server p99", "errors", "p99 × idle"],
      [
        ...API_KINDS.map((k) => row(k, base.filter((x) => x.kind === k), under.filter((x) => x.kind === k), routeIs(ROUTES[k].method, ROUTES[k].route))),
        row("all API", base, under, anyApiRoute),
        row("HLS media playlist", undefined, within(playlistLatencies, r.warmEnd, r.runEnd), hlsRoute),
        row("HLS segment", undefined, within(segmentLatencies, r.warmEnd, r.runEnd), hlsRoute),
      ],
    ),
    "",
    `   the server's event loop delay, ms (monitorEventLoopDelay preloaded into the server: how late its 10 ms timer fired; one reading per ${SAMPLE_MS / 1000} s)`,
    "",
    formatTable(["", "readings", "p50 (median)", "p99 (median)", "p99 (worst)", "max"], [loopRow("idle (baseline)", loopIdle), loopRow("soak (after warm-up)", loopLoad)]),
    ...(notSent > 0 ? [`   ${notSent} API requests not sent (over ${API_MAX_IN_FLIGHT} unanswered, or the bench fell > 1 s behind)`] : []),
    ...(errors.length ? ["   API errors (first ones):", ...errors.slice(0, 10).map((e) => `     ${e}`)] : []),
  ];
}

function webhookSection(r: SoakResult): string[] {
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

interface MemoryVerdict {
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

function judgeMemory(r: SoakResult): MemoryVerdict {
  const judged = r.samples.filter((x) => x.at >= r.warmEnd);
  const first = judged[0];
  const last = r.samples[r.samples.length - 1]!;
  const points = judged.filter((x) => x.rssMiB !== undefined).map((x) => ({ x: (x.at - r.runStart) / 60_000, y: x.rssMiB! }));
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

function resourcesSection(r: SoakResult, mem: MemoryVerdict): string[] {
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

function timelineSection(r: SoakResult, judged: StreamMedia[]): string[] {
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
      fixed(latencyP(segmentLatencies.filter((x) => x.at >= from && x.at < to), 99), 1),
      String(cb.segments - ca.segments),
      String(cb.dropped - ca.dropped),
      String(judged.reduce((n, j) => n + j.stalls.filter((x) => x.at >= from && x.at < to).length, 0)),
      String(readerStallStarts.filter((x) => x >= from && x < to).length),
    ]);
  }
  return [
    "",
    "5. timeline (minutes since every stream went live; RSS and fds at the end of each period; loop p99 = the server's worst event loop reading)",
    "",
    formatTable(["min", "RSS MiB", "fds", "node %", "ffmpeg %", "others %", "API reqs", "API p99 ms", "loop p99 ms", "seg p99 ms", "segs read", "dropped", "stream stalls", "reader stalls"], rows),
  ];
}

/** Pipeline restarts and failures during the run, from the server's counters. */
function pipelineCounts(r: SoakResult): { restarts: number; failures: number } {
  const delta = (name: string) => (metricSum(r.metrics.end, name) ?? NaN) - (metricSum(r.metrics.live, name) ?? 0);
  return { restarts: delta("onair_pipeline_restarts_total"), failures: delta("onair_pipeline_failures_total") };
}

function serverSection(r: SoakResult): string[] {
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

function targetsSection(r: SoakResult, judged: StreamMedia[], mem: MemoryVerdict): string[] {
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

function report(r: SoakResult): string {
  const judged = r.streams.map((s) => judgeStream(s, r.warmEnd, r.runEnd, r.stallMs));
  const mem = judgeMemory(r);
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

async function main(): Promise<void> {
  const settings = readSettings();
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.on(sig, () => {
      if (cleaning) {
        // A second signal: no more waiting.
        for (const c of running) c.signal("SIGKILL");
        process.exit(130);
      }
      process.stderr.write(`\n${sig}: stopping every process this bench started\n`);
      void cleanUp().then(() => process.exit(130));
    });
  }
  const result = await runSoak(settings);
  if (!result) return;
  process.stdout.write(report(result) + "\n");
  if (result.broken) throw new Error(result.broken);
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`bench:soak failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => cleanUp());
