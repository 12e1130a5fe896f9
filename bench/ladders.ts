// Ladder cost benchmark: `npm run bench:ladders`.
//
// What it costs onair to serve one 3-rendition ladder (720p, 480p, 360p at 30 fps), three ways,
// beside a bare ffmpeg baseline measured in the same run:
//   packaged     the encoder's own ladder over Enhanced RTMP multitrack video (E-RTMP v2), as
//                OBS 31's enhanced broadcasting sends it: track 0 (720p) as plain enhanced
//                packets, tracks 1 and 2 as one-track multitrack messages of their own id, to a
//                stream with `profiles: []`. onair packages each track as a rendition with no
//                ffmpeg at all (src/media/packagingRun.ts, src/ingest/mp4Pipe.ts).
//   transcoded   the 720p track alone (plain enhanced H.264, no multitrack) to a stream whose 3
//                profiles are the same three sizes: one ffmpeg decodes it once and encodes the
//                ladder (src/media/liveArgs.ts buildLiveArgs).
//   mixed        the encoder's 720p and 480p tracks (multitrack) to the same 3-profile stream:
//                the two rungs it sent are copied, and one ffmpeg decodes the 720p track to
//                encode the 360p rung alone (src/media/ladder.ts matchTracks).
//   bare ffmpeg  exactly the transcoded pipeline's arguments (bareArgs in bench/lib.ts, the
//                baseline of bench/live.ts: buildLiveArgs with the ingest's pipe swapped for the
//                720p source read with -re, and onair's packager for ffmpeg's HLS muxer), outside
//                onair: what the transcoded way would cost with no server around it.
//
// The source: testsrc2 and a tone, encoded once per run at each size by ffmpeg (libx264
// veryfast, no B-frames, a keyframe every 60 frames in all three: aligned 2 s GOPs; AAC), 20 s,
// then published by this process paced in real time and looped (test/helpers/enhancedFrames.ts,
// over the RTMP client of test/helpers/rtmpClient.ts). The bare baseline reads the 720p encode
// as the FLV that onair's ingest writes into its ffmpeg (src/ingest/flvForm.ts, flvPipe.ts).
// onair runs in its own process (`npm start`, with HLS_SEGMENT_SECONDS=2 to match the GOP), so
// the CPU it takes is its own and not this process's publishing.
//
// Per way, BENCH_RUNS (3) publishes one after another; the last one is measured over a steady
// window of BENCH_LADDERS_WINDOW seconds (15) that starts 3 s after the ladder became playable:
//   playable      from the publish command to the master playlist answering 200 with three
//                 variants that each list a segment (bare: from the spawn to each of its three
//                 playlists listing one), median, min and max of the runs;
//   node, ffmpeg  CPU seconds per wall second of the server's Node process and of its ffmpeg
//                 children (/proc/<pid>/stat; bare: the bare ffmpeg in the ffmpeg column);
//   total         the two together: what serving the ladder costs. The ratios compare these,
//                 because absolute figures on a small shared machine mean little run to run;
//   bench         this process (the publisher and the playlist polling), apart from the above;
//   media s/s     media seconds gained per wall second by the slowest of the three renditions
//                 (from when each new segment was seen): about 1 when a way keeps real time, so
//                 that its CPU figures measure the ladder rather than a backlog;
//   others        what the rest of the machine took meanwhile (/proc/stat busy time minus all
//                 of the above), % of one core: a high figure marks a noisy round.
// Settings: BENCH_LADDERS_WINDOW (15), BENCH_RUNS (3); FFMPEG_PATH as for the server.
// Quick run: BENCH_LADDERS_WINDOW=8 BENCH_RUNS=1.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../src/config";
import { flvBytes } from "../src/ingest/flvPipe";
import { audioForPipeline, videoForPipeline } from "../src/ingest/flvForm";
import { renditionLadder } from "../src/media/ladder";
import { variantDir, variantPlaylist } from "../src/media/hlsFiles";
import { parseMediaPlaylist } from "../src/media/playlists";
import { readAudioTag, readVideoTag } from "../src/rtmp";
import type { Profile } from "../src/shapes";
import { enhancedFrames, multitrackLadder, publishPaced, type EnhancedStream } from "../test/helpers/enhancedFrames";
import { RtmpPublisher } from "../test/helpers/rtmpClient";
import { startServerProcess, type ServerProcess } from "../test/helpers/serverProcess";
import {
  bareArgs, Child, exitOnSignal, ffmpegChildren, ffmpegVersion, fixed, formatTable, killPids, machineBusySeconds, median,
  positiveIntFromEnv, processCpuSeconds, running, serverApi, stopServerProcess,
} from "./lib";

const FFMPEG = process.env.FFMPEG_PATH || "ffmpeg";
const WINDOW_S = positiveIntFromEnv("BENCH_LADDERS_WINDOW", 15, 600);
const RUNS = positiveIntFromEnv("BENCH_RUNS", 3, 50);
const CLIP_SECONDS = 20;
const FPS = 30;
/** Frames between keyframes, the same in every rendition: OBS aligns its tracks' keyframes so. */
const GOP = 60;
/** The server's segment length: the source's GOP, so packaged and transcoded cut alike. */
const SEGMENT_SECONDS = GOP / FPS;
/** After playable, before the window: the first segments' start-up work is not the steady cost. */
const SETTLE_MS = 3000;
const PLAYABLE_TIMEOUT_MS = 30_000;
const IDLE_TIMEOUT_MS = 20_000;
const POLL_MS = 100;
/** When a new segment is seen is known to this much: ±0.2 s on a 12 s span is ±2 % of media s/s. */
const WINDOW_POLL_MS = 200;
const LADDER: Profile[] = [
  { name: "720p", width: 1280, height: 720, fps: FPS, bitrate: 3_000_000 },
  { name: "480p", width: 852, height: 480, fps: FPS, bitrate: 1_600_000 },
  { name: "360p", width: 640, height: 360, fps: FPS, bitrate: 800_000 },
];
const RENDITIONS = renditionLadder(LADDER, SEGMENT_SECONDS);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-ladders-"));
const clients = new Set<RtmpPublisher>();
let server: ServerProcess | undefined;

exitOnSignal(() => {
  for (const c of clients) c.close();
  for (const c of running) c.signal("SIGKILL");
  killPids([...ffmpegChildren(server?.pid).keys()]);
  void server?.kill();
  fs.rmSync(workDir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// The source

interface Source {
  /** All three renditions as one multitrack publish. */
  ladder: EnhancedStream;
  /** The 720p and 480p renditions as one multitrack publish. */
  partial: EnhancedStream;
  /** The 720p rendition alone. */
  top: EnhancedStream;
  /** The 720p rendition as the FLV onair's ingest writes into its ffmpeg. */
  topFlv: string;
}

async function encodeSource(): Promise<Source> {
  const encodes: EnhancedStream[] = [];
  // One at a time: on a small machine three encodes at once take as long, and hold more memory.
  for (const p of LADDER) {
    const kbps = p.bitrate / 1000;
    // No scene-cut keyframes: every track's keyframes at the same instants, GOP by GOP.
    const encoder = ["-c:v", "libx264", "-preset", "veryfast", "-bf", "0", "-sc_threshold", "0", "-b:v", `${kbps}k`, "-maxrate", `${kbps}k`, "-bufsize", `${2 * kbps}k`];
    encodes.push(await enhancedFrames("avc1", CLIP_SECONDS, { size: { width: p.width, height: p.height }, fps: FPS, gop: GOP, encoder }));
  }
  const [top, ...others] = encodes;
  const topFlv = path.join(workDir, "top.flv");
  const tags: Buffer[] = [];
  for (const m of top!.messages) {
    const form = m.type === 9 ? videoForPipeline(readVideoTag(m.body), m.body) : audioForPipeline(readAudioTag(m.body), m.body);
    if (form.body) tags.push(flvBytes({ kind: m.type === 9 ? "video" : "audio", timestamp: m.timestamp, body: form.body }, tags.length === 0));
  }
  fs.writeFileSync(topFlv, Buffer.concat(tags));
  return { ladder: multitrackLadder(top!, others), partial: multitrackLadder(top!, others.slice(0, 1)), top: top!, topFlv };
}

// ---------------------------------------------------------------------------------------------
// The ways

/** One publish (or bare ffmpeg) of a way, from its start until stopped. */
interface Running {
  /** performance.now() at the publish command (bare: the spawn). */
  startedAt: number;
  /** The server's Node process; undefined for the bare baseline. */
  nodePid: number | undefined;
  ffmpegPids(): number[];
  /** The three variant playlists, on disk. */
  playlists: string[];
  /** Every rendition can be played. */
  playable(): Promise<boolean>;
  /** Why the way stopped working, if it did (the publisher's connection closed, ffmpeg exited). */
  problem(): string | undefined;
  stop(): Promise<void>;
}

interface Way {
  label: string;
  start(): Promise<Running>;
}

interface BenchStream {
  id: string;
  streamKey: string;
  playbackId: string;
}

/** A way through onair: `source` published to a stream with `profiles`. */
async function onairWay(s: ServerProcess, label: string, profiles: Profile[], source: EnhancedStream): Promise<Way> {
  const stream = (await serverApi(s, "POST", "/stream", { name: `bench ladders ${label}`, profiles })) as BenchStream;
  const origin = s.apiUrl.replace(/\/api$/, "");
  const hlsDir = path.join(workDir, "data", "hls", stream.playbackId);
  const active = async () => ((await serverApi(s, "GET", `/stream/${stream.id}`)) as { isActive?: boolean }).isActive === true;
  return {
    label,
    start: async () => {
      const client = await RtmpPublisher.connect(`${s.rtmpUrl}/${stream.streamKey}`, { timeoutMs: 10_000 });
      clients.add(client);
      const startedAt = performance.now();
      const status = await client.publish();
      if (status.closed || status.code !== "NetStream.Publish.Start") {
        client.close();
        clients.delete(client);
        throw new Error(`${label}: the publish was refused (${status.closed ? "connection closed" : `${status.code}: ${status.description}`})`);
      }
      const loop = new AbortController();
      const publishing = publishPaced(client, source, { loop: loop.signal });
      return {
        startedAt,
        nodePid: s.pid,
        ffmpegPids: () => [...ffmpegChildren(s.pid).keys()],
        playlists: RENDITIONS.map((r) => variantPlaylist(hlsDir, r)),
        // isActive first: the last run's playlists are still there until this session starts.
        playable: async () => (await active()) && (await masterPlays(`${origin}/hls/${stream.playbackId}/index.m3u8`)),
        problem: () => (client.isOpen ? undefined : `${label}: the server closed the publisher's connection`),
        stop: async () => {
          loop.abort();
          await publishing;
          client.close();
          clients.delete(client);
          const deadline = performance.now() + IDLE_TIMEOUT_MS;
          while ((await active()) || ffmpegChildren(s.pid).size > 0) {
            if (performance.now() > deadline) throw new Error(`${label}: the session did not end within ${IDLE_TIMEOUT_MS / 1000} s of the publisher leaving`);
            await sleep(200);
          }
        },
      };
    },
  };
}

/** The master answers 200 with every rendition, and each variant lists a segment. */
async function masterPlays(url: string): Promise<boolean> {
  const master = await fetch(url);
  if (master.status !== 200) return false;
  const variants = (await master.text()).split("\n").filter((l) => l.trim() !== "" && !l.startsWith("#"));
  if (variants.length !== RENDITIONS.length) return false;
  for (const v of variants) {
    const media = await fetch(new URL(v.trim(), master.url));
    if (media.status !== 200 || !(await media.text()).includes("#EXTINF")) return false;
  }
  return true;
}

/** bareArgs on the 720p source: the transcoded way's ffmpeg, outside onair. */
function bareWay(topFlv: string): Way {
  const config = loadConfig({ ...process.env, DATA_DIR: path.join(workDir, "data"), HLS_SEGMENT_SECONDS: String(SEGMENT_SECONDS) });
  let run = 0;
  return {
    label: "bare ffmpeg",
    start: async () => {
      const outDir = path.join(workDir, `bare-${run++}`);
      for (const r of RENDITIONS) fs.mkdirSync(variantDir(outDir, r), { recursive: true });
      const startedAt = performance.now();
      const ffmpeg = new Child("bare ffmpeg", FFMPEG, bareArgs(topFlv, outDir, RENDITIONS, config, "bare"));
      const playlists = RENDITIONS.map((r) => variantPlaylist(outDir, r));
      return {
        startedAt,
        nodePid: undefined,
        ffmpegPids: () => (ffmpeg.pid === undefined ? [] : [ffmpeg.pid]),
        playlists,
        playable: async () => playlists.every((p) => readSegments(p).length > 0),
        problem: () => (ffmpeg.isRunning ? undefined : ffmpeg.describeExit()),
        stop: async () => {
          await ffmpeg.stop();
          fs.rmSync(outDir, { recursive: true, force: true });
        },
      };
    },
  };
}

function readSegments(playlist: string): { seq: number; duration: number }[] {
  try {
    return parseMediaPlaylist(fs.readFileSync(playlist, "utf8")).segments;
  } catch {
    return [];
  }
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface CpuSample {
  at: number;
  node: number;
  ffmpeg: Map<number, number>;
  bench: number;
  machine: number;
}

function cpuSample(r: Running): CpuSample {
  const ffmpeg = new Map<number, number>();
  for (const pid of r.ffmpegPids()) {
    const cpu = processCpuSeconds(pid);
    if (cpu !== undefined) ffmpeg.set(pid, cpu);
  }
  const self = process.cpuUsage();
  return {
    at: performance.now(),
    node: r.nodePid === undefined ? 0 : (processCpuSeconds(r.nodePid) ?? NaN),
    ffmpeg,
    bench: (self.user + self.system) / 1e6,
    machine: machineBusySeconds(),
  };
}

interface Window {
  /** CPU seconds per wall second. */
  node: number | undefined;
  ffmpeg: number;
  total: number;
  bench: number;
  /** % of one core. */
  others: number;
  /** The most ffmpeg processes seen at once. */
  ffmpegProcesses: number;
  /** Media seconds per wall second of the slowest rendition. */
  mediaRate: number;
  /** What the ffmpeg processes at the window's start were running. */
  commands: string[];
}

/** New segments of one playlist: when each was first seen, and its length. */
class SegmentWatch {
  private readonly base: number;
  private readonly seen = new Map<number, { at: number; duration: number }>();

  constructor(private readonly playlist: string) {
    this.base = Math.max(-1, ...readSegments(playlist).map((s) => s.seq));
  }

  poll(now: number): void {
    for (const s of readSegments(this.playlist)) if (s.seq > this.base && !this.seen.has(s.seq)) this.seen.set(s.seq, { at: now, duration: s.duration });
  }

  /** Media after the first new segment over the wall time to the last: whole segments only, no ±1 quantisation. */
  rate(): number {
    const segs = [...this.seen.entries()].sort((a, b) => a[0] - b[0]).map(([, s]) => s);
    if (segs.length < 2) return 0;
    const media = segs.slice(1).reduce((sum, s) => sum + s.duration, 0);
    return media / ((segs[segs.length - 1]!.at - segs[0]!.at) / 1000);
  }
}

async function measureWindow(r: Running): Promise<Window> {
  const watches = r.playlists.map((p) => new SegmentWatch(p));
  const a = cpuSample(r);
  let ffmpegProcesses = a.ffmpeg.size;
  const until = a.at + WINDOW_S * 1000;
  while (performance.now() < until) {
    await sleep(WINDOW_POLL_MS);
    const problem = r.problem();
    if (problem) throw new Error(`during the window: ${problem}`);
    for (const w of watches) w.poll(performance.now());
    ffmpegProcesses = Math.max(ffmpegProcesses, r.ffmpegPids().length);
  }
  const b = cpuSample(r);
  const wall = (b.at - a.at) / 1000;
  // A process that started or ended inside the window counts from (or to) where it was seen.
  let ffmpeg = 0;
  for (const [pid, cpu] of b.ffmpeg) ffmpeg += cpu - (a.ffmpeg.get(pid) ?? cpu);
  const node = (b.node - a.node) / wall;
  const bench = (b.bench - a.bench) / wall;
  const total = node + ffmpeg / wall;
  const busy = (b.machine - a.machine) / wall;
  return {
    node: r.nodePid === undefined ? undefined : node,
    ffmpeg: ffmpeg / wall,
    total,
    bench,
    others: Math.max(0, busy - total - bench) * 100,
    ffmpegProcesses,
    mediaRate: Math.min(...watches.map((w) => w.rate())),
    commands: [...a.ffmpeg.keys()].map(commandLine),
  };
}

function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return "";
  }
}

interface WayResult {
  label: string;
  playable: number[];
  window: Window;
}

/** BENCH_RUNS starts, each timed to playable; the last one also measured over the window. */
async function measureWay(way: Way): Promise<WayResult> {
  const playable: number[] = [];
  let window: Window | undefined;
  for (let run = 1; run <= RUNS; run++) {
    console.error(`  ${way.label}: run ${run}/${RUNS}${run === RUNS ? `, then a ${WINDOW_S} s window` : ""}`);
    const r = await way.start();
    try {
      const deadline = r.startedAt + PLAYABLE_TIMEOUT_MS;
      while (!(await r.playable())) {
        const problem = r.problem();
        if (problem) throw new Error(`before playable: ${problem}`);
        if (performance.now() > deadline) throw new Error(`${way.label}: not playable within ${PLAYABLE_TIMEOUT_MS / 1000} s`);
        await sleep(POLL_MS);
      }
      playable.push((performance.now() - r.startedAt) / 1000);
      if (run === RUNS) {
        await sleep(SETTLE_MS);
        window = await measureWindow(r);
      }
    } finally {
      await r.stop();
    }
  }
  return { label: way.label, playable, window: window! };
}

// ---------------------------------------------------------------------------------------------
// Report

function waysTable(results: WayResult[]): string {
  const rows = results.map(({ label, playable, window: w }) => [
    label,
    String(w.ffmpegProcesses),
    fixed(median(playable), 2),
    fixed(Math.min(...playable), 2),
    fixed(Math.max(...playable), 2),
    fixed(w.node, 3),
    fixed(w.ffmpeg, 3),
    fixed(w.total, 3),
    fixed(w.bench, 3),
    fixed(w.mediaRate, 2),
    fixed(w.others, 0),
  ]);
  return formatTable(
    ["way", "ffmpeg procs", "playable s (med)", "min", "max", "node CPU-s/s", "ffmpeg CPU-s/s", "total CPU-s/s", "bench CPU-s/s", "media s/s (min)", "others %"],
    rows,
  );
}

/**
 * What a reader of the ratios should know: the server's ffmpeg does more than bareArgs asks
 * (a thumbnail, Opus audio for WebRTC playback) where it does, and a way that ran a process it
 * should not have (packaged: none; transcoded: one).
 */
function notes(bare: WayResult, transcoded: WayResult, mixed: WayResult, packaged: WayResult): string[] {
  const out: string[] = [];
  const cmd = transcoded.window.commands.join(" ");
  const extra = [cmd.includes("thumbnail.jpg") ? "a thumbnail (mjpeg)" : "", cmd.includes("libopus") ? "Opus audio and FLV video pipes for WebRTC playback" : ""].filter(Boolean);
  if (extra.length > 0) out.push(`onair's ffmpeg also writes ${extra.join(" and ")}, which bare ffmpeg does not: part of transcoded / bare`);
  if (transcoded.window.ffmpegProcesses !== 1) out.push(`transcoded ran ${transcoded.window.ffmpegProcesses} ffmpeg processes, not 1`);
  if (mixed.window.ffmpegProcesses !== 1) out.push(`mixed ran ${mixed.window.ffmpegProcesses} ffmpeg processes, not 1`);
  if (mixed.window.commands.join(" ").split("libx264").length - 1 !== 1) out.push("mixed encoded more than the one missing rung");
  if (packaged.window.ffmpegProcesses !== 0) out.push(`packaged ran ${packaged.window.ffmpegProcesses} ffmpeg processes, not none`);
  for (const r of [bare, transcoded, mixed, packaged]) if (r.window.mediaRate < 0.95) out.push(`${r.label} fell behind real time (media s/s ${r.window.mediaRate.toFixed(2)}): its CPU is that of a backlog`);
  return out.map((n) => `  note: ${n}`);
}

function ratiosTable(bare: WayResult, transcoded: WayResult, mixed: WayResult, packaged: WayResult): string {
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? undefined : a / b);
  const playable = (r: WayResult) => median(r.playable);
  return formatTable(
    ["", "total CPU", "playable s"],
    [
      ["packaged / transcoded", fixed(ratio(packaged.window.total, transcoded.window.total), 3), fixed(ratio(playable(packaged), playable(transcoded)), 2)],
      ["mixed / transcoded", fixed(ratio(mixed.window.total, transcoded.window.total), 3), fixed(ratio(playable(mixed), playable(transcoded)), 2)],
      ["transcoded / bare ffmpeg", fixed(ratio(transcoded.window.total, bare.window.total), 3), fixed(ratio(playable(transcoded), playable(bare)), 2)],
    ],
  );
}

async function main(): Promise<void> {
  let results: WayResult[];
  try {
    console.error(`encoding the ${CLIP_SECONDS} s source at ${LADDER.map((p) => `${p.width}x${p.height}`).join(", ")}`);
    const source = await encodeSource();
    const s = (server = await startServerProcess(path.join(workDir, "data"), { LOG_LEVEL: "warn", HLS_SEGMENT_SECONDS: String(SEGMENT_SECONDS) }));
    // Bare first, then transcoded, mixed and packaged: the ways compared most closely run side by side.
    const ways = [
      bareWay(source.topFlv),
      await onairWay(s, "transcoded", LADDER, source.top),
      await onairWay(s, "mixed", LADDER, source.partial),
      await onairWay(s, "packaged", [], source.ladder),
    ];
    results = [];
    for (const way of ways) results.push(await measureWay(way));
  } finally {
    for (const c of clients) c.close();
    await Promise.all([...running].map((c) => c.stop()));
    await stopServerProcess(server);
    fs.rmSync(workDir, { recursive: true, force: true });
  }
  const [bare, transcoded, mixed, packaged] = results as [WayResult, WayResult, WayResult, WayResult];
  const cpus = os.cpus();
  console.log(
    [
      "",
      `onair ladder cost: one ${LADDER.map((p) => p.name).join("/")} ladder at ${FPS} fps, packaged from the encoder's multitrack, transcoded from its top track, or mixed (two tracks copied, one rung encoded)`,
      `  machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? "unknown"}); node ${process.version}; ${ffmpegVersion(FFMPEG)}`,
      `  BENCH_RUNS=${RUNS}, BENCH_LADDERS_WINDOW=${WINDOW_S} s; segments of ${SEGMENT_SECONDS} s; source: libx264 veryfast -bf 0 -g ${GOP}, ` +
        `${LADDER.map((p) => `${p.width}x${p.height} ${p.bitrate / 1e6} Mb/s`).join(", ")}, AAC; ${CLIP_SECONDS} s looped`,
      "  CPU in CPU seconds per wall second (cores) over the window; others in % of one core",
      "",
      waysTable(results),
      "",
      ratiosTable(bare, transcoded, mixed, packaged),
      ...notes(bare, transcoded, mixed, packaged),
      "",
    ].join("\n"),
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench:ladders failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
