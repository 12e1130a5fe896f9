// Viewers one stream can have: `npm run bench:viewers`.
//
// One onair process (as `npm start` runs it, WebRTC on loopback, the viewer caps raised) and one
// stream with a 3-rung ladder of a 720p source (720p 2.5 Mb/s, 480p 1 Mb/s, 360p 0.6 Mb/s at
// 30 fps), pushed over RTMP by ffmpeg (testsrc2 1280x720 + sine) for the whole run. Then, step by
// step, N WHEP viewers, and separately N LL-HLS viewers of the same stream, each step measured
// for BENCH_STEP_SECONDS once its viewers have started (and had their first keyframe). The
// baseline is the N=0 step of the same run: the ladder alone. Viewers live in
// BENCH_VIEWER_PROCESSES processes of their own (bench/viewerLoad.ts), light on purpose (they
// count, they keep nothing): the point is the server.
//
// Per step: the server's CPU (its Node process; its ffmpeg, the ladder's encode, apart), CPU and
// RSS per viewer over the N=0 step, packet loss (RTP sequence gaps; for HLS failed requests), the
// frames the server could not hand libdatachannel (framesDropped, summed from the viewers'
// resources), and whether viewers keep real time: video frames received per second per viewer
// against the 30 sent (a WHEP viewer is behind under 95 %; an HLS viewer when the parts it
// received cover under 95 % of the wall clock, or it ends a second or more behind the newest part).
//
// Settings: BENCH_VIEWERS ("0,25,50,100,200"; 0 is always measured first), BENCH_STEP_SECONDS (20),
// BENCH_VIEWER_PROCESSES (2).

import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { pushTestStream } from "../test/helpers/media";
import { startServerProcess, type ServerProcess } from "../test/helpers/serverProcess";
import { exitOnSignal, ffmpegVersion, fixed, formatTable, median, positiveIntFromEnv, processCpuSeconds, childPids, killPids, stopServerProcess } from "./lib";
import type { ViewerCounters } from "./viewerLoad";

const ROOT = path.resolve(__dirname, "..");
const FFMPEG = process.env.FFMPEG_PATH || "ffmpeg";
const FPS = 30;
const STEP_SECONDS = positiveIntFromEnv("BENCH_STEP_SECONDS", 20, 3600);
const PROCESSES = positiveIntFromEnv("BENCH_VIEWER_PROCESSES", 2, 64);
const LADDER = [
  { name: "720p", width: 1280, height: 720, fps: FPS, bitrate: 2_500_000 },
  { name: "480p", width: 854, height: 480, fps: FPS, bitrate: 1_000_000 },
  { name: "360p", width: 640, height: 360, fps: FPS, bitrate: 600_000 },
];
/** The rendition the HLS viewers play: the one a WHEP viewer starts on (2.5 Mb/s assumed until its player says). */
const HLS_RENDITION_HEIGHT = 480;
/** Real time: 95 % of the frames sent. */
const KEEPS_UP = 0.95;
/** An HLS viewer this many parts (1 s) behind the newest at the end of a step has fallen behind. */
const BEHIND_PARTS = 5;
const SETTLE_MS = 3000;
/** Past the ladder's 1 s keyframe interval, and a little more. */
const FIRST_FRAME_MS = 1500;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** BENCH_VIEWERS: counts separated by commas, 0 first whatever the order given. */
function viewerSteps(): number[] {
  const raw = process.env.BENCH_VIEWERS || "0,25,50,100,200";
  const counts = raw.split(",").map((s) => Number(s.trim()));
  if (counts.some((n) => !Number.isInteger(n) || n < 0 || n > 10_000)) throw new Error(`BENCH_VIEWERS must be counts from 0 to 10000 separated by commas, got "${raw}"`);
  return [0, ...[...new Set(counts)].filter((n) => n > 0).sort((a, b) => a - b)];
}

let server: ServerProcess | undefined;
let push: ChildProcess | undefined;
/** Why the push ended, once it has: its exit and last words. */
let pushEnded: string | undefined;
const loaders: Loader[] = [];



exitOnSignal(() => {
  for (const l of loaders) l.child.kill("SIGKILL");
  push?.kill("SIGKILL");
  killPids(childPids(server?.pid));
  void server?.kill();
});


const rssBytes = (pid: number) => {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) * 1024;
  } catch {
    return NaN;
  }
};

// ---------------------------------------------------------------------------------------------
// The viewer processes (bench/viewerLoad.ts): one command at a time, one answer a line

interface Answer {
  op: string;
  started?: number;
  failed?: string[];
  viewers?: ViewerCounters[];
  framesSent?: number;
  framesDropped?: number;
  switches?: number;
  answered?: number;
  renditions?: Record<string, number>;
  message?: string;
}

class Loader {
  readonly child: ChildProcess;
  private readonly waiting: ((a: Answer) => void)[] = [];
  private stderr = "";

  constructor() {
    this.child = spawn(process.execPath, ["--import", "tsx", "bench/viewerLoad.ts"], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    readline.createInterface({ input: this.child.stdout! }).on("line", (line) => this.waiting.shift()?.(JSON.parse(line) as Answer));
    this.child.stderr!.on("data", (c: Buffer) => (this.stderr = (this.stderr + c.toString()).slice(-4000)));
    this.child.once("exit", (code, signal) => {
      for (const w of this.waiting.splice(0)) w({ op: "error", message: `the viewer process exited (${code ?? signal}): ${this.stderr}` });
    });
  }

  async send(cmd: object): Promise<Answer> {
    const answer = new Promise<Answer>((resolve) => this.waiting.push(resolve));
    this.child.stdin!.write(JSON.stringify(cmd) + "\n");
    const a = await answer;
    if (a.op === "error") throw new Error(`viewer process: ${a.message}`);
    return a;
  }

  get cpu(): number {
    return processCpuSeconds(this.child.pid!) ?? 0;
  }
}

// ---------------------------------------------------------------------------------------------
// A step: N viewers of one protocol, held STEP_SECONDS

type Protocol = "WHEP" | "LL-HLS";

interface Step {
  protocol: Protocol | "none";
  n: number;
  started: number;
  failures: string[];
  seconds: number;
  serverCores: number;
  ffmpegCores: number;
  loaderCores: number;
  pushCores: number;
  /** Cores busy with processes the bench did not start (the machine's, less the server, its ffmpeg, the push, the viewers). */
  otherCores: number;
  /** Seconds of video the ladder made per second (its 480p rendition's live edge). */
  ladderPace: number;
  rss: number;
  /** Per viewer over the window: frames/s, bits/s, lost and expected, parts behind at the end. */
  fps: number[];
  /** Seconds of media received per second of the window, per viewer. */
  pace: number[];
  bps: number[];
  lost: number;
  expected: number;
  behind: number;
  resources?: Answer;
  /** The source's push ended during the step (onair ends a session whose ladder is too slow): why. */
  ended?: string;
}

/**
 * Where the newest part of a media playlist ends, in the source's clock (ms): the last
 * EXT-X-PROGRAM-DATE-TIME (its segment's first sample) and the durations listed after it. Two
 * of these, against the wall clock, say whether the ladder keeps real time.
 */
export function liveEdgeMs(playlist: string): number {
  let base = NaN;
  let complete = 0;
  let open = 0;
  for (const line of playlist.split("\n")) {
    if (line.startsWith("#EXT-X-PROGRAM-DATE-TIME:")) {
      base = Date.parse(line.slice("#EXT-X-PROGRAM-DATE-TIME:".length));
      complete = open = 0;
    } else if (line.startsWith("#EXTINF:")) {
      complete += Number.parseFloat(line.slice("#EXTINF:".length));
      open = 0;
    } else if (line.startsWith("#EXT-X-PART:")) open += Number(/DURATION=([\d.]+)/.exec(line)?.[1] ?? 0);
  }
  return base + (complete + open) * 1000;
}

/** The whole machine's busy and total jiffies, from /proc/stat: what else ran beside the bench. */
function machineJiffies(): { busy: number; total: number } {
  const f = (fs.readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - (f[3] ?? 0) - (f[4] ?? 0), total };
}

interface Sample {
  at: number;
  machine: { busy: number; total: number };
  /** The HLS rendition's live edge (liveEdgeMs). */
  edge: number;
  server: number;
  ffmpeg: Map<number, number>;
  loaders: number;
  push: number;
  viewers: ViewerCounters[][];
}

async function sample(urls: { hls: string }): Promise<Sample> {
  const playlist = await fetch(urls.hls).then((r) => r.text()).catch(() => "");
  const viewers = await Promise.all(loaders.map(async (l) => (await l.send({ op: "sample" })).viewers ?? []));
  const ffmpeg = new Map(childPids(server?.pid).map((pid) => [pid, processCpuSeconds(pid) ?? 0]));
  return { at: performance.now(), machine: machineJiffies(), edge: liveEdgeMs(playlist), server: processCpuSeconds(server!.pid) ?? 0, ffmpeg, loaders: loaders.reduce((s, l) => s + l.cpu, 0), push: processCpuSeconds(push!.pid!) ?? 0, viewers };
}

/** The ffmpeg CPU between two samples, of the processes alive at both. */
function ffmpegSeconds(a: Sample, b: Sample): number {
  let sum = 0;
  for (const [pid, cpu] of b.ffmpeg) sum += cpu - (a.ffmpeg.get(pid) ?? cpu);
  return sum;
}

function measured(protocol: Step["protocol"], n: number, started: number, failures: string[], a: Sample, b: Sample): Step {
  const seconds = (b.at - a.at) / 1000;
  const step: Step = {
    protocol, n, started, failures, seconds,
    serverCores: (b.server - a.server) / seconds,
    ffmpegCores: ffmpegSeconds(a, b) / seconds,
    loaderCores: (b.loaders - a.loaders) / seconds,
    pushCores: (b.push - a.push) / seconds,
    ladderPace: (b.edge - a.edge) / 1000 / seconds,
    otherCores: 0,
    rss: rssBytes(server!.pid),
    fps: [], pace: [], bps: [], lost: 0, expected: 0, behind: 0,
  };
  const machineCores = ((b.machine.busy - a.machine.busy) / (b.machine.total - a.machine.total)) * os.cpus().length;
  step.otherCores = Math.max(0, machineCores - step.serverCores - step.ffmpegCores - step.loaderCores - step.pushCores);
  b.viewers.forEach((list, l) =>
    list.forEach((end, i) => {
      const start = a.viewers[l]?.[i];
      if (!start) return;
      const fps = (end.videoFrames - start.videoFrames) / seconds;
      step.fps.push(fps);
      step.pace.push((end.mediaSeconds - start.mediaSeconds) / seconds);
      step.bps.push(((end.bytes - start.bytes) * 8) / seconds);
      step.lost += end.lost - start.lost;
      step.expected += end.expected - start.expected;
      if (fps < KEEPS_UP * FPS || end.behindParts >= BEHIND_PARTS) step.behind++;
    }),
  );
  return step;
}

async function runStep(protocol: Step["protocol"], n: number, urls: { whep: string; hls: string }): Promise<Step> {
  process.stderr.write(`  ${protocol === "none" ? "ladder only" : `${n} ${protocol} viewers`}: starting\n`);
  let started = 0;
  const failures: string[] = [];
  if (protocol !== "none") {
    const share = (i: number) => Math.floor(n / loaders.length) + (i < n % loaders.length ? 1 : 0);
    let first = 0;
    const answers = await Promise.all(
      loaders.map((l, i) => {
        const cmd = protocol === "WHEP" ? { op: "whep", url: urls.whep, count: share(i) } : { op: "hls", url: urls.hls, count: share(i), first, fps: FPS };
        first += share(i);
        return l.send(cmd);
      }),
    );
    for (const a of answers) {
      started += a.started ?? 0;
      failures.push(...(a.failed ?? []));
    }
  }
  process.stderr.write(`    ${started} started${failures.length ? `, ${failures.length} failed (${failures[0]})` : ""}; holding ${STEP_SECONDS} s\n`);
  // A WHEP viewer's video begins at the next keyframe (1 s apart): the window starts once it has.
  await sleep(FIRST_FRAME_MS);
  const a = await sample(urls);
  await sleep(STEP_SECONDS * 1000);
  const b = await sample(urls);
  const step = measured(protocol, n, started, failures, a, b);
  if (protocol === "WHEP") step.resources = mergeResources(await Promise.all(loaders.map((l) => l.send({ op: "resources" }))));
  await Promise.all(loaders.map((l) => l.send({ op: "stop" })));
  await sleep(SETTLE_MS);
  return step;
}

function mergeResources(answers: Answer[]): Answer {
  const sum: Answer = { op: "resources", framesSent: 0, framesDropped: 0, switches: 0, answered: 0, renditions: {} };
  for (const a of answers) {
    sum.framesSent! += a.framesSent ?? 0;
    sum.framesDropped! += a.framesDropped ?? 0;
    sum.switches! += a.switches ?? 0;
    sum.answered! += a.answered ?? 0;
    for (const [k, v] of Object.entries(a.renditions ?? {})) sum.renditions![k] = (sum.renditions![k] ?? 0) + v;
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------
// The stream

async function api(method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(server!.apiUrl + p, {
    method,
    headers: { authorization: `Bearer ${server!.key}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** The ladder live and pushed; the WHEP endpoint and the media playlist of the HLS viewers' rendition. */
async function startStream(): Promise<{ whep: string; hls: string }> {
  const stream = await api("POST", "/stream", { name: "bench viewers", profiles: LADDER });
  const source = ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", String(FPS), "-keyint_min", String(FPS), "-pix_fmt", "yuv420p", "-b:v", "2500k"];
  const p = pushTestStream(`${server!.rtmpUrl}/${stream.streamKey}`, { seconds: 24 * 3600, size: "1280x720", fps: FPS, codec: source });
  push = p.child;
  void p.exited.then((e) => (pushEnded = `exit ${e.code ?? e.signal} after ${fixed(e.afterMs / 1000, 0)} s: ${e.stderr.trim().split("\n").slice(-3).join(" | ")}`));
  const deadline = Date.now() + 60_000;
  while (!(await api("GET", `/stream/${stream.id}`)).isActive) {
    if (push.exitCode !== null || Date.now() > deadline) throw new Error(`the stream did not go live: ${server!.log().slice(-2000)}`);
    await sleep(200);
  }
  const origin = server!.apiUrl.replace(/\/api$/, "");
  const masterUrl = `${origin}/hls/${stream.playbackId}/index.m3u8`;
  const master = await (await fetch(masterUrl)).text();
  const lines = master.split("\n");
  const at = lines.findIndex((l) => l.startsWith("#EXT-X-STREAM-INF") && l.includes(`x${HLS_RENDITION_HEIGHT},`) || l.endsWith(`x${HLS_RENDITION_HEIGHT}`));
  const variant = lines.slice(at + 1).find((l) => l && !l.startsWith("#"));
  if (at < 0 || !variant) throw new Error(`no ${HLS_RENDITION_HEIGHT}p variant in the master playlist:\n${master}`);
  return { whep: `${origin}/whep/${stream.playbackId}`, hls: new URL(variant, masterUrl).toString() };
}

/** The reason of the server's "live session ended" line, if it logged one. */
function sessionEndReason(log: string): string | undefined {
  const line = log.split("\n").findLast((l) => l.includes('"msg":"live session ended"'));
  return line ? (JSON.parse(line) as { reason?: string }).reason : undefined;
}

// ---------------------------------------------------------------------------------------------
// Report

const perViewer = (s: Step, base: Step) => (s.n > 0 ? (s.serverCores - base.serverCores) / s.n : NaN);
const keepsUp = (s: Step) => s.behind === 0 && s.started === s.n && !s.ended;

function row(s: Step, base: Step): string[] {
  const r = s.resources;
  return [
    s.protocol === "none" ? "ladder only" : s.protocol,
    String(s.n),
    s.n ? `${s.started}${s.failures.length ? ` (${s.failures.length} failed)` : ""}` : "-",
    fixed(s.serverCores, 2),
    fixed(s.ffmpegCores, 2),
    fixed(s.ladderPace, 3),
    s.n && !s.ended ? fixed(perViewer(s, base) * 1000, 1) : "-",
    fixed(s.rss / 2 ** 20, 0),
    s.n ? fixed((s.rss - base.rss) / s.n / 1024, 0) : "-",
    s.n ? fixed(median(s.bps) / 1e6, 2) : "-",
    s.n ? fixed(s.expected ? (100 * s.lost) / s.expected : 0, 2) : "-",
    r ? `${r.framesDropped} of ${r.framesSent}` : "-",
    s.n ? `${fixed(median(s.fps), 1)} / ${fixed(Math.min(...s.fps), 1)}` : "-",
    s.n ? fixed(median(s.pace), 3) : "-",
    s.ended ? "stream ended" : s.n ? `${s.behind}/${s.n}` : "-",
    fixed(s.loaderCores, 2),
    fixed(s.otherCores, 2),
  ];
}

/** The first step that fell behind, and viewers per core from the largest that did not. */
function verdict(protocol: Protocol, steps: Step[], base: Step): string {
  const mine = steps.filter((s) => s.protocol === protocol);
  const fell = mine.find((s) => !keepsUp(s));
  const kept = mine.filter((s) => s.n < (fell?.n ?? Infinity)).at(-1);
  const per = kept ? perViewer(kept, base) : NaN;
  const how = fell?.ended ? `the stream ended: ${fell.ended}` : `${fell?.behind} of ${fell?.n} behind${fell && fell.started < fell.n ? `, ${fell.n - fell.started} did not start` : ""}`;
  const where = fell ? `falls behind at N=${fell.n} (${how})` : `not within the steps (measured up to N=${mine.at(-1)?.n ?? 0})`;
  const perCore = kept ? `${fixed(1 / per, 0)} viewers per core of the server's Node process (at N=${kept.n}: ${fixed(per * 1000, 1)} millicores each)` : "no step kept real time";
  return `${protocol}: ${where}; ${perCore}`;
}

function report(steps: Step[]): string[] {
  const base = steps[0]!;
  const whepRenditions = steps.filter((s) => s.resources?.answered).at(-1)?.resources?.renditions;
  return [
    "",
    "onair viewers of one stream: WebRTC (WHEP) and LL-HLS",
    `  machine: ${os.cpus().length} cores, node ${process.version}, ${ffmpegVersion(FFMPEG)}; ${STEP_SECONDS} s per step, viewers in ${PROCESSES} processes of their own`,
    `  stream: testsrc2 1280x720 + sine pushed over RTMP (x264 ultrafast 2.5 Mb/s, by an ffmpeg of the bench) → ladder ${LADDER.map((r) => `${r.name} ${r.bitrate / 1e6} Mb/s`).join(", ")} at ${FPS} fps`,
    `  WHEP viewers were served ${whepRenditions ? Object.entries(whepRenditions).map(([k, v]) => `${k} × ${v}`).join(", ") : "-"} (at the largest step they were answered in); LL-HLS viewers play the ${HLS_RENDITION_HEIGHT}p rendition`,
    "  server/ffmpeg cores: CPU of onair's Node process / of its ffmpeg (the ladder) over the step; per viewer: server cores over the N=0 step, / N.",
    "  ladder pace: seconds of video the ladder made per second (the 480p playlist's live edge by its PROGRAM-DATE-TIME).",
    "  RSS/viewer: the server's RSS at the step's end over N=0's, / N. loss: RTP sequence gaps (WHEP), failed requests (LL-HLS).",
    "  fps: video frames received per second per viewer, median / lowest, of 30 sent (LL-HLS: seconds of parts × 30);",
    "  media s/s: seconds of video received per second, median (WHEP: how far the RTP timestamps went; LL-HLS: parts' durations).",
    `  behind: viewers under ${KEEPS_UP * 100} % of that (LL-HLS also: ${BEHIND_PARTS} parts or more behind the newest at the end).`,
    `  Everything (the push, the ladder, the server, the viewers) shares this machine's cores; the push took ${fixed(base.pushCores, 2)} cores at N=0;`,
    "  others' cores: the machine's busy cores less all of those (processes the bench did not start).",
    "",
    formatTable(
      ["protocol", "N", "started", "server cores", "ffmpeg cores", "ladder pace", "millicores/viewer", "RSS MiB", "RSS KiB/viewer", "Mb/s/viewer", "loss %", "frames dropped", "fps med / min", "media s/s", "behind", "viewer procs cores", "others' cores"],
      steps.map((s) => row(s, base)),
    ),
    "",
    verdict("WHEP", steps, base),
    verdict("LL-HLS", steps, base),
  ];
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const counts = viewerSteps();
  const most = Math.max(...counts);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-viewers-"));
  try {
    server = await startServerProcess(dataDir, {
      LOG_LEVEL: "warn",
      API_RATE_LIMIT: "0",
      WEBRTC_BIND_ADDRESS: "127.0.0.1",
      WEBRTC_MAX_VIEWERS: String(Math.max(500, 2 * most)),
      WEBRTC_MAX_VIEWERS_PER_STREAM: String(Math.max(500, 2 * most)),
    });
    const urls = await startStream();
    for (let i = 0; i < PROCESSES; i++) loaders.push(new Loader());
    // The ladder past its start: its first seconds encode faster than real time.
    await sleep(5000);
    process.stderr.write("running:\n");
    const steps: Step[] = [await runStep("none", 0, urls)];
    for (const n of counts.filter((c) => c > 0)) {
      for (const protocol of ["WHEP", "LL-HLS"] as const) {
        const step = await runStep(protocol, n, urls);
        steps.push(step);
        // Nothing to watch after it: the run ends with the step the stream ended in.
        if (pushEnded) {
          step.ended = sessionEndReason(server.log()) ?? `the push ended (${pushEnded})`;
          break;
        }
      }
      if (pushEnded) break;
    }
    process.stdout.write(report(steps).join("\n") + "\n");
  } finally {
    for (const l of loaders) {
      l.child.stdin!.end();
      const timer = setTimeout(() => l.child.kill("SIGKILL"), 10_000);
      await new Promise((r) => (l.child.exitCode !== null ? r(undefined) : l.child.once("exit", r)));
      clearTimeout(timer);
    }
    push?.kill("SIGKILL");
    await stopServerProcess(server);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:viewers failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exitCode = 1;
});
