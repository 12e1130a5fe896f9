// RTMP ingest at N concurrent publishers: `npm run bench:rtmp`.
//
// onair's own RTMP server takes N publishers at once, each on a passthrough stream (`profiles:
// []`, so no transcode dominates), in two forms:
//   legacy    ffmpeg pushing FLV (`-f flv`, CodecID 7 AVC and SoundFormat 10 AAC);
//   enhanced  E-RTMP: ffmpeg's FLV on a pipe, each tag rewritten to the enhanced form
//             (ExVideoTagHeader FourCC avc1, ExAudio mp4a) as test/live/enhancedRtmp.test.ts
//             does, and published by the test client of test/helpers/rtmpClient.ts.
// Every publisher sends the same pre-encoded clip (720p30 H.264 2.5 Mbit/s + AAC 128 kbit/s),
// looped and paced in real time, with `-c copy`: the pushers encode nothing.
//
// The baseline is bench/bareRelay.ts (onair's RTMP server and LiveSource, no admission, no
// sessions, no HLS) in its own process, taking the same N publishers of the same form in the
// same run, right before onair's round. Per round, over a steady window:
//   accepted   publishers still publishing at the window's end (E-RTMP: answered Publish.Start);
//   playable   streams whose master playlist answers 200 and whose variant lists a segment;
//   CPU        the server's own process (onair: the Node process; its ffmpeg children apart);
//   Mbit/s     bytes the server read from its RTMP sockets (tcp_info bytes_received, `ss`);
//   CPU-s/Mbit CPU seconds per Mbit ingested, i.e. cores per Mbit/s; "× relay" is onair's
//              figure over the bare relay's from the same N and form;
//   others     the CPU the rest of the machine took meanwhile (the publishers, this bench,
//              anything else on a shared host), % of one core: a high figure marks a noisy round.
// Settings: BENCH_RTMP_STREAMS (1,4,8), BENCH_RTMP_WINDOW seconds (15).

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodeAmf0, encodeAudioTag, encodeVideoTag, FlvReader, readAudioTag, readVideoTag, type AudioTag, type FlvTag, type VideoTag } from "../src/rtmp";
import { RtmpPublisher as TestPublisher } from "../test/helpers/rtmpClient";
import { startServerProcess, type ServerProcess } from "../test/helpers/serverProcess";
import { Child, childPids, exitOnSignal, ffmpegChildren, ffmpegVersion, fixed, formatTable, killPids, machineBusySeconds, makeClip, positiveIntFromEnv, positiveIntListFromEnv, processCpuSeconds, running, serverApi, stopServerProcess } from "./lib";

const FFMPEG = process.env.FFMPEG_PATH || "ffmpeg";
const ROOT = path.resolve(__dirname, "..");
const COUNTS = positiveIntListFromEnv("BENCH_RTMP_STREAMS", [1, 4, 8], 64);
const WINDOW_S = positiveIntFromEnv("BENCH_RTMP_WINDOW", 15, 600);
/** After every publisher is up (onair: playable), before the window: GOP caches filled, remuxes started. */
const SETTLE_MS = 3000;
const PLAYABLE_TIMEOUT_MS = 20_000;
const IDLE_TIMEOUT_MS = 20_000;
const FORMS = ["legacy", "enhanced"] as const;
type Form = (typeof FORMS)[number];
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

let server: ServerProcess | undefined;
const clients = new Set<TestPublisher>();
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-rtmp-"));
exitOnSignal(() => {
  for (const c of clients) c.close();
  for (const c of running) c.signal("SIGKILL");
  killPids(childPids(server?.pid));
  void server?.kill();
  fs.rmSync(workDir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// Publishers

interface Publisher {
  /** Still publishing (the server took it and has not dropped it). */
  accepted(): boolean;
  stop(): Promise<void>;
}

/** The clip, looped and paced by `-re`, copied as FLV to `output` (an rtmp:// URL or pipe:1). */
function clipArgs(clip: string, output: string): string[] {
  return ["-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", clip, "-c", "copy", "-f", "flv", output];
}

function legacyPublisher(clip: string, url: string, name: string): Publisher {
  const push = new Child(name, FFMPEG, clipArgs(clip, url));
  return { accepted: () => push.isRunning, stop: async () => void (await push.stop(2000)) };
}

/** A legacy tag's packet in the enhanced form: the same samples behind a FourCC header. */
function enhanced<T extends VideoTag | AudioTag>(tag: T): T {
  if (!("legacy" in tag) || !tag.legacy) return tag;
  const { legacy: _legacy, ...packet } = tag;
  return packet as T;
}

/** onMetaData's plain values, for the test client's @setDataFrame. */
function metadataOf(tag: FlvTag): { [key: string]: number | string | boolean } | undefined {
  const [name, values] = decodeAmf0(tag.data);
  if (name !== "onMetaData" || values === null || typeof values !== "object" || Array.isArray(values)) return undefined;
  const out: { [key: string]: number | string | boolean } = {};
  for (const [k, v] of Object.entries(values)) if (typeof v === "number" || typeof v === "string" || typeof v === "boolean") out[k] = v;
  return out;
}

function sendEnhanced(client: TestPublisher, tag: FlvTag): void {
  if (tag.type === 9) client.sendVideo(encodeVideoTag(enhanced(readVideoTag(tag.data))), tag.timestamp);
  else if (tag.type === 8) client.sendAudio(encodeAudioTag(enhanced(readAudioTag(tag.data))), tag.timestamp);
  else if (tag.type === 18) {
    const metadata = metadataOf(tag);
    if (metadata) client.sendMetadata(metadata);
  }
}

async function enhancedPublisher(clip: string, url: string, name: string): Promise<Publisher> {
  const client = await TestPublisher.connect(url, { timeoutMs: 10_000 });
  clients.add(client);
  const close = () => (client.close(), clients.delete(client));
  const status = await client.publish();
  if (status.closed || status.code !== "NetStream.Publish.Start") {
    close();
    console.error(`${name}: refused (${status.closed ? "connection closed" : `${status.code}: ${status.description}`})`);
    return { accepted: () => false, stop: async () => undefined };
  }
  const reader = new FlvReader();
  const push = new Child(name, FFMPEG, clipArgs(clip, "pipe:1"), {
    onStdoutData: (chunk) => {
      try {
        for (const tag of reader.push(chunk)) sendEnhanced(client, tag);
      } catch (err) {
        console.error(`${name}: ${String(err)}`);
        push.signal("SIGKILL");
      }
    },
  });
  return {
    accepted: () => push.isRunning && client.isOpen,
    stop: async () => {
      await push.stop(2000);
      close();
    },
  };
}

const publisher = (form: Form, clip: string, url: string, name: string): Promise<Publisher> =>
  form === "legacy" ? Promise.resolve(legacyPublisher(clip, url, name)) : enhancedPublisher(clip, url, name);

// ---------------------------------------------------------------------------------------------
// The servers

interface Side {
  label: string;
  pid: number;
  rtmpPort: number;
  /** Where publisher i of `form` publishes. */
  url(form: Form, i: number): string;
  /** Publisher i's stream plays (onair only). */
  playable?(form: Form, i: number): Promise<boolean>;
  /** Every stream of `form` has ended its session (onair only). */
  idle?(form: Form, n: number): Promise<void>;
}

interface BenchStream {
  id: string;
  streamKey: string;
  playbackId: string;
}

/** isActive (this session, not the last one's playlist), then the master playlist 200 and a variant with a segment. */
async function playsHls(s: ServerProcess, stream: BenchStream): Promise<boolean> {
  const origin = s.apiUrl.replace(/\/api$/, "");
  const deadline = performance.now() + PLAYABLE_TIMEOUT_MS;
  for (; performance.now() < deadline; await sleep(200)) {
    if (!(await serverApi(s, "GET", `/stream/${stream.id}`)).isActive) continue;
    const master = await fetch(`${origin}/hls/${stream.playbackId}/index.m3u8`);
    if (master.status !== 200) continue;
    const variant = (await master.text()).split("\n").find((l) => l.trim() !== "" && !l.startsWith("#"));
    if (!variant) continue;
    const media = await fetch(new URL(variant.trim(), master.url));
    if (media.status === 200 && (await media.text()).includes("#EXTINF")) return true;
  }
  return false;
}

async function startOnair(dataDir: string, maxN: number): Promise<Side> {
  const s = (server = await startServerProcess(dataDir, { LOG_LEVEL: "warn" }));
  const streams = {} as Record<Form, BenchStream[]>;
  for (const form of FORMS) streams[form] = await Promise.all(range(maxN).map((i) => serverApi(s, "POST", "/stream", { name: `bench ${form} ${i}`, profiles: [] })));
  return {
    label: "onair",
    pid: s.pid,
    rtmpPort: Number(new URL(s.rtmpUrl).port),
    url: (form, i) => `${s.rtmpUrl}/${streams[form][i]!.streamKey}`,
    playable: (form, i) => playsHls(s, streams[form][i]!),
    idle: async (form, n) => {
      const deadline = performance.now() + IDLE_TIMEOUT_MS;
      for (const stream of streams[form].slice(0, n)) {
        while ((await serverApi(s, "GET", `/stream/${stream.id}`)).isActive && performance.now() < deadline) await sleep(200);
      }
    },
  };
}

async function startRelay(): Promise<{ side: Side; relay: Child }> {
  let port: number | undefined;
  const relay = new Child("bare relay", process.execPath, ["--import", "tsx", "bench/bareRelay.ts"], { cwd: ROOT, onStdout: (l) => (port ??= Number(/^port (\d+)/.exec(l)?.[1]) || undefined) });
  const deadline = performance.now() + 20_000;
  while (port === undefined) {
    if (!relay.isRunning || performance.now() > deadline) throw new Error(`the bare relay did not start: ${relay.describeExit()}`);
    await sleep(50);
  }
  const rtmpPort = port;
  return { relay, side: { label: "bare relay", pid: relay.pid!, rtmpPort, url: (form, i) => `rtmp://127.0.0.1:${rtmpPort}/live/${form}-${i}` } };
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface Sample {
  at: number;
  cpu: number;
  /** CPU seconds of each ffmpeg child of the server (onair's remuxes). */
  children: Map<number, number>;
  /** tcp_info bytes_received of each connection on the server's RTMP port, by peer address. */
  received: Map<string, number>;
  /** CPU seconds the whole machine has been busy (/proc/stat: all but idle and iowait). */
  machine: number;
}

/** bytes_received of the established connections whose local port is `port` (`ss -ti`: an address line, then its info line). */
function socketBytes(port: number): Map<string, number> {
  const out = spawnSync("ss", ["-tinH", "state", "established", `( sport = :${port} )`], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`ss failed (${out.status}): ${out.stderr}`);
  const bytes = new Map<string, number>();
  let peer: string | undefined;
  for (const line of out.stdout.split("\n")) {
    if (!/^\s/.test(line)) peer = line.trim().split(/\s+/).pop();
    else if (peer) bytes.set(peer, Number(/bytes_received:(\d+)/.exec(line)?.[1] ?? 0));
  }
  return bytes;
}

function sample(side: Side): Sample {
  return { at: performance.now(), cpu: processCpuSeconds(side.pid) ?? NaN, children: ffmpegChildren(side.pid), received: socketBytes(side.rtmpPort), machine: machineBusySeconds() };
}

interface Round {
  accepted: number;
  playable?: number;
  /** Cores: the server process's CPU seconds per second of the window. */
  cpu: number;
  childrenCpu: number;
  mbps: number;
  /** Cores the rest of the machine took meanwhile: the publishers, this bench, other work on a shared host. */
  others: number;
}

function between(a: Sample, b: Sample): Omit<Round, "accepted" | "playable"> {
  const seconds = (b.at - a.at) / 1000;
  let childrenCpu = 0;
  for (const [pid, cpu] of b.children) childrenCpu += cpu - (a.children.get(pid) ?? cpu);
  let bytes = 0;
  for (const [peer, n] of b.received) bytes += n - (a.received.get(peer) ?? 0);
  const cpu = (b.cpu - a.cpu) / seconds;
  return { cpu, childrenCpu: childrenCpu / seconds, mbps: (bytes * 8) / 1e6 / seconds, others: (b.machine - a.machine) / seconds - cpu - childrenCpu / seconds };
}

async function measure(side: Side, form: Form, n: number, clip: string): Promise<Round> {
  const settled = await Promise.allSettled(range(n).map((i) => publisher(form, clip, side.url(form, i), `${side.label} ${form} publisher ${i}`)));
  // By index: publisher i publishes stream i, whether or not the others connected.
  const byIndex = settled.map((r) => (r.status === "fulfilled" ? r.value : undefined));
  const pubs = byIndex.filter((p): p is NonNullable<typeof p> => p !== undefined);
  for (const r of settled) if (r.status === "rejected") console.error(`${side.label} ${form}: a publisher failed to connect: ${String(r.reason)}`);
  try {
    const plays = side.playable ? await Promise.all(range(n).map((i) => (byIndex[i]?.accepted() ? side.playable!(form, i) : false))) : undefined;
    await sleep(SETTLE_MS);
    const a = sample(side);
    await sleep(WINDOW_S * 1000);
    const b = sample(side);
    return { accepted: pubs.filter((p) => p.accepted()).length, playable: plays?.filter(Boolean).length, ...between(a, b) };
  } finally {
    await Promise.all(pubs.map((p) => p.stop()));
    await side.idle?.(form, n);
    await sleep(1000);
  }
}

// ---------------------------------------------------------------------------------------------

function row(form: Form, n: number, onair: Round, relay: Round): string[] {
  const perMbit = (r: Round) => r.cpu / r.mbps;
  return [
    form,
    String(n),
    `${onair.accepted}/${n}`,
    `${onair.playable ?? "-"}/${n}`,
    fixed(onair.mbps, 1),
    fixed((onair.cpu / n) * 100, 2),
    fixed((onair.childrenCpu / n) * 100, 2),
    fixed(perMbit(onair), 4),
    `${relay.accepted}/${n}`,
    fixed(relay.mbps, 1),
    fixed((relay.cpu / n) * 100, 2),
    fixed(perMbit(relay), 4),
    fixed(perMbit(onair) / perMbit(relay), 2),
    `${fixed(onair.others * 100, 0)} / ${fixed(relay.others * 100, 0)}`,
  ];
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  let relay: Child | undefined;
  try {
    const clip = await makeClip(FFMPEG, workDir, { size: "1280x720", fps: 30, seconds: 10 });
    const started = await startRelay();
    relay = started.relay;
    const onair = await startOnair(path.join(workDir, "data"), Math.max(...COUNTS));
    for (const n of COUNTS) {
      for (const form of FORMS) {
        const base = await measure(started.side, form, n, clip);
        const ours = await measure(onair, form, n, clip);
        rows.push(row(form, n, ours, base));
        console.error(`done: ${form} N=${n}`);
      }
    }
  } finally {
    await relay?.stop(3000, "SIGTERM");
    await stopServerProcess(server);
    fs.rmSync(workDir, { recursive: true, force: true });
  }
  console.log(`RTMP ingest, N concurrent publishers on passthrough streams: ${WINDOW_S} s windows, ${os.cpus().length} cores, ${ffmpegVersion(FFMPEG)}`);
  console.log("each publisher: 720p30 H.264 2.5 Mbit/s + AAC 128 kbit/s, copied from a clip; the bare relay is the baseline, measured at the same N and form in this run\n");
  console.log(formatTable(
    ["form", "N", "accepted", "playable", "onair Mbit/s", "onair CPU %/stream", "onair ffmpeg %/stream", "onair CPU-s/Mbit", "relay accepted", "relay Mbit/s", "relay CPU %/stream", "relay CPU-s/Mbit", "CPU-s/Mbit × relay", "others % onair/relay"],
    rows,
  ));
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    for (const c of clients) c.close();
    for (const c of running) c.signal("SIGKILL");
    void stopServerProcess(server).finally(() => process.exit(1));
  },
);
