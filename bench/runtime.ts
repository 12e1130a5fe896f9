// Stream runtime benchmark: `npm run bench:runtime [-- memory|capacity|reconnect ...]` (all by default).
//
// The figures of issue 13, each next to a baseline measured in the same run (the machines are
// small and shared: ratios compare across runs, bare times do not):
//   1. memory: the server's RSS (VmRSS of its own process) every second for BENCH_WINDOW s while
//      an 8 Mb/s publisher feeds a passthrough stream and its one slow local reader takes 20 KB/s.
//      In onair that reader is a multistream `source` push (the publish fed to its ffmpeg on a
//      pipe, published by onair over RTMP) to a destination behind a throttling TCP proxy in this
//      process (a bare relay taking the push, bench/bareRelay.ts): onair cuts a local reader more
//      than 4 s of its publisher's rate (at least 4 MiB) plus the cached GOP behind, the proxy
//      then drops the push's connection (what it holds would take minutes at 20 KB/s) and the push
//      retries on its own back-off (1, 2, 4 s…), so the pressure lasts the whole window. Baseline:
//      a bare relay on onair's RTMP server, which queues without bound for a slow RTMP play reader
//      (ffmpeg behind the same proxy, reconnecting 1 s after it ends). "Before" is taken once the
//      RSS has settled after the publish went live (onair grows by tens of MiB in its first
//      seconds live, reader or not). Target: peak growth < 20 MiB.
//   2. capacity: TRANSCODE_BUDGET fits BENCH_LADDERS default ladders; one publish more must be
//      refused ("server at capacity") and the first ones keep speed >= 0.98. Baseline: the same
//      publishes with an unlimited budget, all admitted.
//   3. reconnect: a 2 s drop (publisher SIGKILLed, the same key again 2 s later) → isActive, and →
//      the same HLS player (ffmpeg, never reloaded) playing past where it stalled; next to a fresh
//      first publish → isActive and → a player started then playing its first frame.
// Each server is `npm start`'s process on a temp DATA_DIR and free ports on 127.0.0.1; every
// process is stopped by its PID. Settings: BENCH_WINDOW (60 s), BENCH_LADDERS (2), BENCH_RUNS (3).

import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Child, exitOnSignal, ffmpegVersion, fixed, formatTable, makeClip, median, positiveIntFromEnv, running } from "./lib";
import { metricSum } from "./soak/metrics";
import { childPids } from "./soak/resources";
import { slope } from "./soak/stats";

const ROOT = path.resolve(__dirname, "..");
const WINDOW_S = positiveIntFromEnv("BENCH_WINDOW", 60, 600);
const LADDERS = positiveIntFromEnv("BENCH_LADDERS", 2, 8);
const RUNS = positiveIntFromEnv("BENCH_RUNS", 3, 20);
const READER_BYTES_PER_S = 20 * 1024;
const MEMORY_TARGET_MIB = 20;
const SPEED_TARGET = 0.98;
const DROP_MS = 2000;
const BEFORE_SAMPLES = 5;
const SETTLED_MIB = 2;
const SETTLE_MAX_S = 30;
const LIVE_TIMEOUT_MS = 60_000;
/** The cap's log line: "a local reader (pipeline, push) fell more than 4 s behind its publisher: cut off" (src/ingest/rtmpIngest.ts). */
const CUT_MESSAGE = "a local reader (pipeline, push) fell more than";

interface Profile { name: string; bitrate: number; fps: number; width: number; height: number }
interface Stream { id: string; streamKey: string; playbackId: string }

const DEFAULT_LADDER = (JSON.parse(fs.readFileSync(path.join(ROOT, "ffmpeg-profiles/default.json"), "utf8")) as { profiles: Profile[] }).profiles;
/** Output megapixels per second, what TRANSCODE_BUDGET counts (src/sessions/capacity.ts): 46.9 for the default ladder. */
const ladderCost = (profiles: Profile[]) => profiles.reduce((sum, p) => sum + p.width * p.height * p.fps, 0) / 1e6;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const now = () => performance.now();
const since = (t: number) => (now() - t) / 1000;

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined> | T | undefined, everyMs = 100): Promise<T> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(everyMs);
  }
}

function rssMiB(pid: number): number {
  try {
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;
  } catch {
    return NaN;
  }
}

/** Starts a reading of the machine (everyone's CPU, /proc/stat); the returned function says how busy it was since. */
function machineLoad(): () => string {
  const ticks = () => {
    const t = (fs.readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1, 9).map(Number);
    return { busy: t.reduce((a, b) => a + b, 0) - (t[3] ?? 0) - (t[4] ?? 0), total: t.reduce((a, b) => a + b, 0) };
  };
  const from = ticks();
  return () => {
    const to = ticks();
    const busy = (100 * (to.busy - from.busy)) / Math.max(1, to.total - from.total);
    return `   machine ${busy.toFixed(0)} % busy during this part (all ${os.cpus().length} cores, every user's), load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`;
  };
}

// ---------------------------------------------------------------------------------------------
// The server under test, its API and its media

interface Onair { child: Child; pid: number; baseUrl: string; metricsUrl: string; rtmpPort: number; apiKey: string; ffmpeg: string; cuts: number[]; warnings: Map<string, number> }

async function startOnair(workDir: string, env: Record<string, string>): Promise<Onair> {
  const dataDir = fs.mkdtempSync(path.join(workDir, "data-"));
  let banner = "";
  const o = { cuts: [] as number[], warnings: new Map<string, number>() } as Onair;
  o.child = new Child("onair server", process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", API_RATE_LIMIT: "0", MAX_LIVE_STREAMS_PER_USER: "100", REDIS_URL: "", PUBLIC_URL: "", RTMP_PUBLIC_URL: "", ...env },
    onStdout: (line) => (banner += line + "\n"),
    // pino's JSON lines (on stderr): the cap's cuts, and every warning or error for the report.
    onStderr: (line) => {
      let e: { level?: number; msg?: string; reason?: string };
      try {
        e = JSON.parse(line) as typeof e;
      } catch {
        return;
      }
      if (e.msg?.startsWith(CUT_MESSAGE)) o.cuts.push(now());
      const what = `${e.msg ?? "?"}${e.reason ? ` (${e.reason})` : ""}`;
      if ((e.level ?? 0) >= 40) o.warnings.set(what, (o.warnings.get(what) ?? 0) + 1);
    },
  });
  o.pid = o.child.pid!;
  // The banner (stdout) has the URLs with the ports bound and, on a first start, the API key.
  return waitFor("the server's start-up banner", 60_000, () => {
    if (!o.child.isRunning) throw new Error(`the server did not start: ${o.child.describeExit()}`);
    const key = /API key:\s+(\S+)/.exec(banner)?.[1];
    const api = /API:\s+(http:\/\/\S+)\/api/.exec(banner)?.[1];
    const rtmp = /RTMP ingest:\s+rtmp:\/\/[^:/]+:(\d+)\//.exec(banner)?.[1];
    const ffmpeg = /ffmpeg:\s+(\S+) \(from /.exec(banner)?.[1];
    // /metrics is on the operator's listener (ADMIN_PORT) when the banner names one.
    const metricsUrl = /operator:\s+(http:\/\/\S+\/metrics)/.exec(banner)?.[1] ?? `${api}/metrics`;
    return key && api && rtmp && ffmpeg ? Object.assign(o, { apiKey: key, baseUrl: api, metricsUrl, rtmpPort: Number(rtmp), ffmpeg }) : undefined;
  });
}

/** SIGTERM (the server stops its own ffmpeg), then whatever it left, by PID. */
async function stopOnair(o: Onair): Promise<void> {
  const kids = childPids(o.pid);
  await o.child.stop(12_000, "SIGTERM");
  killPids(kids);
}

function killPids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

async function api<T>(o: Onair, method: string, p: string, body?: unknown): Promise<T> {
  const res = await fetch(`${o.baseUrl}/api${p}`, {
    method,
    headers: { authorization: `Bearer ${o.apiKey}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} /api${p} returned ${res.status}: ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

const createStream = (o: Onair, name: string, profiles: Profile[]) => api<Stream>(o, "POST", "/stream", { name, profiles });
const streamState = (o: Onair, id: string) => api<{ isActive: boolean; sourceSegmentsDuration: number }>(o, "GET", `/stream/${id}`);
const waitActive = (o: Onair, s: Stream) => waitFor(`stream ${s.id} live`, LIVE_TIMEOUT_MS, async () => ((await streamState(o, s.id)).isActive ? true : undefined));
async function scrape(o: Onair): Promise<string> {
  const res = await fetch(o.metricsUrl);
  if (!res.ok) throw new Error(`GET ${o.metricsUrl} returned ${res.status}`);
  return res.text();
}
const ingestUrl = (o: Onair, s: Stream) => `rtmp://127.0.0.1:${o.rtmpPort}/live/${s.streamKey}`;

/** An OBS-like source: the clip looped in real time, copied to RTMP. `errors` gets ffmpeg's complaints ("Server error: …"). */
function publish(ffmpeg: string, clip: string, url: string, name: string, errors: string[] = []): Child {
  return new Child(name, ffmpeg, ["-hide_banner", "-nostdin", "-loglevel", "warning", "-re", "-stream_loop", "-1", "-i", clip, "-c", "copy", "-f", "flv", url], { onStderr: (l) => errors.push(l) });
}

// ---------------------------------------------------------------------------------------------
// 1. A slow reader and the server's memory

/**
 * A TCP proxy on 127.0.0.1 in front of `upstreamPort` that passes one direction's bytes at
 * `rate` bytes/s (a token bucket; the sending socket is paused while it is spent) and the other
 * as they come. "to client": the server's bytes to a player (an RTMP reader falling behind);
 * "to server": a client's bytes to the server (a publisher to a slow multistream destination).
 * `forwarded` counts the throttled direction's bytes, `connections` the clients taken.
 */
async function slowProxy(upstreamPort: number, rate: number, throttled: "to client" | "to server") {
  const sockets = new Set<net.Socket>();
  const stats = { forwarded: 0, connections: 0 };
  const server = net.createServer((client) => {
    stats.connections++;
    const upstream = net.connect(upstreamPort, "127.0.0.1");
    const [from, to] = throttled === "to client" ? [upstream, client] : [client, upstream];
    let tokens = rate / 10;
    const refill = setInterval(() => {
      tokens = Math.min(rate, tokens + rate / 10);
      if (tokens > 0 && from.isPaused()) from.resume();
    }, 100);
    from.on("data", (chunk: Buffer) => {
      to.write(chunk);
      stats.forwarded += chunk.length;
      if ((tokens -= chunk.length) <= 0) from.pause();
    });
    to.pipe(from);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined).on("close", () => {
        clearInterval(refill);
        client.destroy();
        upstream.destroy();
        sockets.delete(s);
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const dropAll = () => sockets.forEach((s) => s.destroy());
  return { port: (server.address() as net.AddressInfo).port, stats, dropAll, close: () => (dropAll(), server.close()) };
}

type SlowProxy = Awaited<ReturnType<typeof slowProxy>>;

interface MemoryResult { side: string; settleS: number; before: number; rss: { s: number; mib: number }[]; connects: number; readerKBps: number; firstCutS?: number; cutsMetric?: number }

/**
 * Waits until the RSS of `pid` has moved less than SETTLED_MIB over the last 3 s (at most
 * SETTLE_MAX_S); returns how long that took. A server that has just gone live keeps growing
 * for some seconds with no reader at all (onair at 8 Mb/s: about 10 MiB a second for the 5 s
 * after isActive, then flat): a "before" taken during that ramp counted it against the reader.
 */
async function settled(pid: number): Promise<number> {
  const start = now();
  const seen: number[] = [];
  for (;;) {
    seen.push(rssMiB(pid));
    const last = seen.slice(-4);
    if ((last.length === 4 && Math.max(...last) - Math.min(...last) < SETTLED_MIB) || since(start) >= SETTLE_MAX_S) return since(start);
    await sleep(1000);
  }
}

/**
 * The RSS of `pid` every second for WINDOW_S from `begin()`, which sets the slow reader going
 * through `proxy`, against its median over the BEFORE_SAMPLES s before. After each cut (`cuts`,
 * from the server's log) the proxy drops its connections: it still holds what the server had
 * sent, minutes of it at this rate. `player` is a reader the bench runs itself (an RTMP play),
 * started again 1 s after it ended or was cut; without one the reader is the server's own (a
 * push), which retries by itself.
 */
async function slowReaderWindow(side: string, pid: number, proxy: SlowProxy, cuts: number[], begin: () => Promise<void>, player?: () => Child): Promise<MemoryResult> {
  const result: MemoryResult = { side, settleS: await settled(pid), before: NaN, rss: [], connects: 0, readerKBps: 0 };
  // The start, as the median of the 5 s before the reader: one reading may catch the garbage
  // of the server's start-up just before a collection.
  const before: number[] = [];
  for (let k = 0; k < BEFORE_SAMPLES; k++, await sleep(1000)) before.push(rssMiB(pid));
  result.before = median(before);
  let reader: Child | undefined;
  const start = now();
  try {
    await begin();
    reader = player?.();
    let handled = 0;
    let reconnectAt: number | undefined;
    for (let tick = 1; since(start) < WINDOW_S; tick++) {
      result.rss.push({ s: since(start), mib: rssMiB(pid) });
      if (cuts.length > handled) {
        result.firstCutS ??= (cuts[0]! - start) / 1000;
        handled = cuts.length;
        proxy.dropAll();
        if (player) {
          await reader?.stop(1000, "SIGKILL");
          reconnectAt = now() + 1000;
        }
      } else if (player && reconnectAt === undefined && !reader?.isRunning) reconnectAt = now() + 1000;
      if (player && reconnectAt !== undefined && now() >= reconnectAt) {
        reconnectAt = undefined;
        reader = player();
      }
      await sleep(Math.max(0, start + tick * 1000 - now()));
    }
    result.rss.push({ s: since(start), mib: rssMiB(pid) });
  } finally {
    await reader?.stop(1000, "SIGKILL");
  }
  result.connects = proxy.stats.connections;
  result.readerKBps = proxy.stats.forwarded / 1024 / since(start);
  return result;
}

/** bench/bareRelay.ts, listening; stopped by its PID. */
async function startBareRelay(): Promise<{ relay: Child; port: number }> {
  let port: number | undefined;
  const relay = new Child("bare relay", process.execPath, ["--import", "tsx", "bench/bareRelay.ts"], { cwd: ROOT, onStdout: (l) => (port ??= Number(/^port (\d+)/.exec(l)?.[1]) || undefined) });
  try {
    return { relay, port: await waitFor("the bare relay's port", 20_000, () => port) };
  } catch (err) {
    await relay.stop(3000, "SIGTERM");
    throw err;
  }
}

async function memoryOnair(workDir: string, clip: string): Promise<MemoryResult> {
  // The push's destination: a bare relay (nobody plays from it) behind the proxy, which takes
  // what onair publishes to it at 20 KB/s.
  const { relay, port } = await startBareRelay();
  let proxy: SlowProxy | undefined;
  let o: Onair | undefined;
  let publisher: Child | undefined;
  try {
    proxy = await slowProxy(port, READER_BYTES_PER_S, "to server");
    // The destination is on loopback, which the outbound policy refuses by default.
    o = await startOnair(workDir, { ALLOW_PRIVATE_DESTINATIONS: "true" });
    const server = o;
    // Disabled until the window: the RSS before is the publish's alone, as on the bare relay.
    const target = await api<{ id: string }>(server, "POST", "/multistream/target", { name: "bench slow destination", url: `rtmp://127.0.0.1:${proxy.port}/live/sink`, disabled: true });
    const s = await api<Stream>(server, "POST", "/stream", { name: "bench slow push", profiles: [], multistream: { targets: [{ id: target.id, profile: "source" }] } });
    publisher = publish(server.ffmpeg, clip, ingestUrl(server, s), "8 Mb/s publisher");
    await waitActive(server, s);
    // Enabling the target starts the push at once (the stream is live).
    const r = await slowReaderWindow("onair", server.pid, proxy, server.cuts, () => api(server, "PATCH", `/multistream/target/${target.id}`, { disabled: false }));
    r.cutsMetric = metricSum(await scrape(server), "onair_rtmp_readers_cut_total");
    if (!publisher.isRunning) throw new Error(`the publisher ended during the window: ${publisher.describeExit()}`);
    return r;
  } finally {
    await publisher?.stop();
    if (o) await stopOnair(o);
    proxy?.close();
    await relay.stop(3000, "SIGTERM");
  }
}

async function memoryBareRelay(ffmpeg: string, clip: string): Promise<MemoryResult> {
  const { relay, port } = await startBareRelay();
  let proxy: SlowProxy | undefined;
  let publisher: Child | undefined;
  try {
    proxy = await slowProxy(port, READER_BYTES_PER_S, "to client");
    const url = `rtmp://127.0.0.1:${proxy.port}/live/bench`;
    publisher = publish(ffmpeg, clip, `rtmp://127.0.0.1:${port}/live/bench`, "8 Mb/s publisher");
    await sleep(4000); // about onair's time to isActive: the publish and its GOP cache are up
    const player = () => new Child("slow reader", ffmpeg, ["-hide_banner", "-nostdin", "-loglevel", "error", "-i", url, "-c", "copy", "-f", "null", "-"]);
    return await slowReaderWindow("bare relay", relay.pid!, proxy, [], async () => undefined, player);
  } finally {
    await publisher?.stop();
    proxy?.close();
    await relay.stop(3000, "SIGTERM");
  }
}

async function memoryPart(workDir: string, ffmpeg: string): Promise<string[]> {
  const clip = await makeClip(ffmpeg, workDir, { size: "1280x720", fps: 30, seconds: 20, videoKbps: 8000 });
  const results = [await memoryOnair(workDir, clip), await memoryBareRelay(ffmpeg, clip)];
  const peak = (r: MemoryResult) => Math.max(...r.rss.map((x) => x.mib)) - r.before;
  const rows = results.map((r) => {
    const [first, last] = [r.before, r.rss[r.rss.length - 1]!.mib];
    const cuts = r.side === "onair" ? `${fixed(r.firstCutS, 1)} / ${r.cutsMetric ?? "-"}` : "-";
    return [r.side, fixed(first, 1), fixed(last, 1), fixed(last - first, 1), fixed(peak(r), 1), fixed(slope(r.rss.map((x) => ({ x: x.s / 60, y: x.mib }))), 1), fixed(r.readerKBps, 1), String(r.connects), cuts];
  });
  const [onair, bare] = results as [MemoryResult, MemoryResult];
  // A reader that got no media (a wrong path) measures nothing.
  const reading = results.every((r) => r.readerKBps >= 0.8 * (READER_BYTES_PER_S / 1024));
  return [
    `1. slow reader: 8 Mb/s publisher (passthrough), one reader at ${READER_BYTES_PER_S / 1024} KB/s (onair: a source push to a slow destination; bare relay: an RTMP player); the server's RSS every second for ${WINDOW_S} s from the reader's start, against its median over the ${BEFORE_SAMPLES} s before`, "",
    formatTable(["server", "RSS before MiB", "end MiB", "growth MiB", "peak growth MiB", "slope MiB/min", "reader KB/s", "reader connects", "first cut s / cuts (metric)"], rows), "",
    `   before: after the RSS had settled (moved < ${SETTLED_MIB} MiB over 3 s, at most ${SETTLE_MAX_S} s): onair ${fixed(onair.settleS, 0)} s after isActive, bare relay ${fixed(bare.settleS, 0)} s after 4 s of publish${results.some((r) => r.settleS >= SETTLE_MAX_S) ? " (not settled: the growth includes the server's own)" : ""}`,
    `   peak growth, onair / bare relay: ${fixed(peak(onair) / peak(bare), 2)}`,
    ...(reading ? [] : [`MISS memory: a reader took less than 80 % of ${READER_BYTES_PER_S / 1024} KB/s: it was not reading the stream, the figures mean nothing`]),
    `${reading && peak(onair) < MEMORY_TARGET_MIB ? "PASS" : "MISS"} memory: onair's RSS peak growth ${fixed(peak(onair), 1)} MiB (target < ${MEMORY_TARGET_MIB}); the reader was cut ${onair.firstCutS === undefined ? "never" : `first after ${fixed(onair.firstCutS, 1)} s`}`,
  ];
}

// ---------------------------------------------------------------------------------------------
// 2. Capacity

interface CapacityResult { label: string; budget: number; extra: string; speeds: number[]; gauges: number[]; notes: string[] }

/** Media seconds per wall second: least-squares slope of sourceSegmentsDuration at the moments it grew (not at the polls). */
function segmentSpeed(points: { x: number; y: number }[]): number {
  return slope(points.filter((p, i) => i > 0 && p.y !== points[i - 1]!.y)) ?? NaN;
}

/** The lowest onair_transcode_speed of these streams (a session that ended has none: NaN, shown as "-"). */
function speedGauge(metrics: string, streams: Stream[]): number {
  return Math.min(...streams.map((s) => metricSum(metrics, "onair_transcode_speed", (labels) => labels.includes(`stream_id="${s.id}"`)) ?? NaN));
}

async function capacityRun(workDir: string, label: string, budget: number, clip: string): Promise<CapacityResult> {
  const o = await startOnair(workDir, { TRANSCODE_BUDGET: String(budget) });
  const publishers: Child[] = [];
  const r: CapacityResult = { label, budget, extra: "", speeds: [], gauges: [], notes: [] };
  try {
    const streams: Stream[] = [];
    for (let k = 0; k <= LADDERS; k++) streams.push(await createStream(o, `bench capacity ${k + 1}`, DEFAULT_LADDER));
    const first = streams.slice(0, LADDERS);
    for (const [k, s] of first.entries()) publishers.push(publish(o.ffmpeg, clip, ingestUrl(o, s), `publisher ${k + 1}`));
    for (const s of first) await waitActive(o, s);
    // One too many: refused at its publish command, or (unlimited budget) live like the others.
    const errors: string[] = [];
    const extra = publish(o.ffmpeg, clip, ingestUrl(o, streams[LADDERS]!), `publisher ${LADDERS + 1}`, errors);
    publishers.push(extra);
    r.extra = await waitFor("the extra publish's outcome", LIVE_TIMEOUT_MS, async () => {
      if (!extra.isRunning) return errors.find((l) => l.includes("Server error")) ?? `it ended without a server error: ${extra.describeExit()}`;
      return (await streamState(o, streams[LADDERS]!.id)).isActive ? "admitted" : undefined;
    }, 250);
    if (r.extra.includes("server at capacity")) {
      r.notes.push(`publisher ${LADDERS + 1}: ${r.extra.replace(/^\[rtmp @ \w+\] /, "")}`);
      r.extra = "refused";
    }
    // The first N for the window: their segment clock every 500 ms; the server's own 30 s speed gauge at half and end.
    const points = first.map(() => [] as { x: number; y: number }[]);
    const start = now();
    while (since(start) < WINDOW_S) {
      const states = await Promise.all(first.map((s) => streamState(o, s.id)));
      states.forEach((st, k) => (st.isActive ? points[k]!.push({ x: since(start), y: st.sourceSegmentsDuration }) : r.notes.push(`stream ${k + 1} stopped being live during the window`)));
      if (r.gauges.length === 0 && since(start) >= WINDOW_S / 2) r.gauges.push(speedGauge(await scrape(o), first));
      await sleep(500);
    }
    r.gauges.push(speedGauge(await scrape(o), first));
    r.speeds = points.map(segmentSpeed);
    for (const [k, p] of publishers.slice(0, LADDERS).entries()) if (!p.isRunning) r.notes.push(`publisher ${k + 1} was disconnected: ${p.describeExit()}`);
    for (const [msg, n] of o.warnings) r.notes.push(`the server warned ${n}×: ${msg}`);
    r.notes = [...new Set(r.notes)];
    return r;
  } finally {
    await Promise.all(publishers.map((p) => p.stop()));
    await stopOnair(o);
  }
}

async function capacityPart(workDir: string, ffmpeg: string): Promise<string[]> {
  const clip = await makeClip(ffmpeg, workDir, { size: "1280x720", fps: 30, seconds: 20, videoKbps: 3000 });
  const budget = Math.ceil(LADDERS * ladderCost(DEFAULT_LADDER)) + 1;
  const [fits, open] = [await capacityRun(workDir, `fits ${LADDERS}`, budget, clip), await capacityRun(workDir, "unlimited", 1_000_000, clip)];
  const minSpeed = (r: CapacityResult) => Math.min(...r.speeds);
  const rows = [fits, open].map((r) => [r.label, String(r.budget), r.extra, ...r.speeds.map((s) => fixed(s, 3)), fixed(Math.min(...r.gauges), 3)]);
  return [
    `2. capacity: ${LADDERS} default ladders (${ladderCost(DEFAULT_LADDER).toFixed(1)} Mpx/s each) from 720p30 3 Mb/s sources, then publish ${LADDERS + 1}; the first ${LADDERS} for ${WINDOW_S} s`,
    "   speed: source media seconds per wall second (slope of each stream's sourceSegmentsDuration); gauge: lowest onair_transcode_speed of those streams at half and end (\"-\": a session ended)", "",
    formatTable(["budget", "TRANSCODE_BUDGET", `publish ${LADDERS + 1}`, ...oneTo(LADDERS).map((k) => `speed ${k}`), "min gauge"], rows),
    ...[fits, open].flatMap((r) => r.notes.map((n) => `   ${r.label}: ${n}`)), "",
    `   min speed, all admitted / budget for ${LADDERS}: ${fixed(minSpeed(open) / minSpeed(fits), 3)}`,
    `${fits.extra === "refused" ? "PASS" : "MISS"} capacity: publish ${LADDERS + 1} ${fits.extra === "refused" ? 'refused with "server at capacity"' : `not refused: ${fits.extra}`}`,
    `${minSpeed(fits) >= SPEED_TARGET ? "PASS" : "MISS"} capacity: the ${LADDERS} admitted keep speed >= ${SPEED_TARGET} (min ${fixed(minSpeed(fits), 3)})`,
  ];
}

const oneTo = (n: number) => Array.from({ length: n }, (_, k) => k + 1);

// ---------------------------------------------------------------------------------------------
// 3. Reconnect to playing

/** An HLS player that never reloads: ffmpeg on the live playlist; out_time is how far it has played. */
function startPlayer(o: Onair, s: Stream): { child: Child; outTime: () => number } {
  let outUs = 0;
  const url = `${o.baseUrl}/hls/${s.playbackId}/index.m3u8`;
  const child = new Child("player", o.ffmpeg, ["-hide_banner", "-nostdin", "-loglevel", "error", "-i", url, "-c", "copy", "-f", "null", "-", "-progress", "pipe:1", "-nostats"], {
    onStdout: (l) => {
      const m = /^out_time_us=(\d+)/.exec(l);
      if (m) outUs = Math.max(outUs, Number(m[1]));
    },
  });
  return { child, outTime: () => outUs / 1e6 };
}

interface ReconnectRun { fresh: { active: number; playing: number }; again: { active: number; playing: number }; sessions: number; lateOld: boolean }

async function reconnectRun(o: Onair, clip: string, run: number): Promise<ReconnectRun> {
  const s = await createStream(o, `bench reconnect ${run}`, []);
  let publisher = publish(o.ffmpeg, clip, ingestUrl(o, s), "publisher");
  let player: ReturnType<typeof startPlayer> | undefined;
  try {
    let t0 = now();
    await waitActive(o, s);
    const fresh = { active: since(t0), playing: 0 };
    const p = (player = startPlayer(o, s));
    await waitFor("the fresh player's first frame", 30_000, () => (p.outTime() > 0 ? true : undefined), 50);
    fresh.playing = since(t0);
    await sleep(6000);
    await publisher.stop(0, "SIGKILL"); // the drop: no goodbye from the encoder
    await sleep(DROP_MS);
    // All the first publisher sent has played by now: ffmpeg's hls demuxer reloads the playlist
    // every half target duration, so the last segment, flushed at the drop, is in.
    const stalledAt = p.outTime();
    t0 = now();
    publisher = publish(o.ffmpeg, clip, ingestUrl(o, s), "publisher (again)");
    await waitActive(o, s);
    const again = { active: since(t0), playing: 0 };
    // No new media can play before the stream is live again: a move by now was the old tail,
    // fetched late (the player's reload fell after the drop's 2 s); it becomes the mark to pass.
    const lateOld = p.outTime() > stalledAt;
    const mark = p.outTime();
    await waitFor("the same player playing past where it stalled", 30_000, () => {
      if (!p.child.isRunning) throw new Error(`the player stopped instead of resuming: ${p.child.describeExit()}`);
      return p.outTime() > mark + 0.05 ? true : undefined;
    }, 50);
    again.playing = since(t0);
    const sessions = (await api<unknown[]>(o, "GET", `/stream/${s.id}/sessions`)).length;
    return { fresh, again, sessions, lateOld };
  } finally {
    await Promise.all([player?.child.stop(1000, "SIGKILL"), publisher.stop()]);
    await api(o, "DELETE", `/stream/${s.id}/terminate`); // no reconnect window left open into the next run
  }
}

async function reconnectPart(workDir: string, ffmpeg: string): Promise<string[]> {
  const clip = await makeClip(ffmpeg, workDir, { size: "1280x720", fps: 30, seconds: 20 });
  const bySegment = new Map<number, ReconnectRun[]>();
  const failures: string[] = [];
  for (const seg of [2, 1]) {
    const o = await startOnair(workDir, { RECONNECT_WINDOW_SECONDS: "30", HLS_SEGMENT_SECONDS: String(seg) });
    bySegment.set(seg, []);
    try {
      for (const run of oneTo(RUNS)) {
        process.stderr.write(`  reconnect: ${seg} s segments, run ${run}/${RUNS}\n`);
        // A run that does not resume is a finding, not the end of the bench.
        await reconnectRun(o, clip, run).then((r) => bySegment.get(seg)!.push(r), (err: Error) => failures.push(`${seg} s segments, run ${run}: ${err.message}`));
      }
    } finally {
      await stopOnair(o);
    }
  }
  const rows = [...bySegment].map(([seg, runs]) => {
    const m = (f: (r: ReconnectRun) => number) => median(runs.map(f));
    const [freshActive, againActive, freshPlaying, againPlaying] = [m((r) => r.fresh.active), m((r) => r.again.active), m((r) => r.fresh.playing), m((r) => r.again.playing)];
    return [`${seg} s`, `${runs.length}`, fixed(freshActive, 2), fixed(againActive, 2), fixed(againActive / freshActive, 2),
      fixed(freshPlaying, 2), fixed(againPlaying, 2), fixed(againPlaying / freshPlaying, 2), runs.map((r) => r.sessions).join(",")];
  });
  const all = [...bySegment.values()].flat();
  const late = all.filter((r) => r.lateOld).length;
  return [
    `3. reconnect to playing: publisher SIGKILLed, the same key again ${DROP_MS / 1000} s later (RECONNECT_WINDOW_SECONDS=30, passthrough 720p30 2.5 Mb/s, 1 s keyframes)`,
    `   medians of ${RUNS} runs, seconds from the publisher's spawn; "fresh" is the stream's first publish and a player started at isActive`, "",
    formatTable(["segment", "runs", "fresh → isActive", "reconnect → isActive", "ratio", "fresh → playing", "reconnect → playing (same player)", "ratio", "sessions per stream"], rows),
    ...failures.map((f) => `   failed: ${f}`),
    ...(late ? [`   ${late} run(s): the player played the old tail after the new publish (before isActive): playing again counted from past that`] : []),
    `${all.length === RUNS * bySegment.size ? "PASS" : "MISS"} reconnect: the same player resumed without a reload in ${all.length}/${RUNS * bySegment.size} runs`,
    `${all.every((r) => r.sessions === 1) ? "PASS" : "MISS"} reconnect: one session per stream across the drop`,
  ];
}

// ---------------------------------------------------------------------------------------------

const PARTS = { memory: memoryPart, capacity: capacityPart, reconnect: reconnectPart };
let workDir: string | undefined;

/** Synchronous, for signals and the end: every process this run started (and the servers' ffmpeg), by PID. */
function killEverything(): void {
  for (const c of running) {
    if (c.pid !== undefined) killPids(childPids(c.pid));
    c.signal("SIGKILL");
  }
  if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((a) => !(a in PARTS));
  if (unknown.length) throw new Error(`unknown part ${unknown.join(", ")}: choose from ${Object.keys(PARTS).join(", ")}`);
  const parts = (asked.length ? asked : Object.keys(PARTS)) as (keyof typeof PARTS)[];
  exitOnSignal(killEverything);
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-runtime-"));
  const ffmpeg = process.env.FFMPEG_PATH || "ffmpeg";
  const print = (lines: string[]) => process.stdout.write(lines.join("\n") + "\n\n");
  print([
    "onair stream runtime benchmark",
    `  machine: ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; node ${process.version}; ${ffmpegVersion(ffmpeg)}`,
    `  BENCH_WINDOW=${WINDOW_S} s, BENCH_LADDERS=${LADDERS}, BENCH_RUNS=${RUNS}; parts: ${parts.join(", ")}`,
  ]);
  for (const part of parts) {
    process.stderr.write(`${part}…\n`);
    const load = machineLoad();
    print([...(await PARTS[part](workDir, ffmpeg)), load()]);
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`bench:runtime failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(killEverything);
