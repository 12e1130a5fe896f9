// Ingest protocols side by side, on one onair process and the same test source (640x360@30
// x264 1 Mbit/s + audio), RTMP being the baseline measured in the same run:
//   publish → playable   the publisher starting to the master playlist answering 200
//   WHIP POST → 201      the offer's round trip (ICE gathered, bridge started)
//   CPU                  onair's own process (the WebRTC peer lives there) and the bridge
//                        ffmpeg, per stream, over a steady window, next to RTMP's
// Settings: BENCH_INGEST_ROUNDS (3), BENCH_INGEST_CPU_SECONDS (10).

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pushTestStream } from "../test/helpers/media";
import { startServerProcess, type ServerProcess } from "../test/helpers/serverProcess";
import { whipPublish, type WhipClient } from "../test/helpers/whipClient";
import { exitOnSignal, ffmpegVersion, fixed, formatTable, median, positiveIntFromEnv, processCpuSeconds, childPids, killPids, stopServerProcess } from "./lib";

const FFMPEG = process.env.FFMPEG_PATH || "ffmpeg";
const ROUNDS = positiveIntFromEnv("BENCH_INGEST_ROUNDS", 3, 50);
const CPU_SECONDS = positiveIntFromEnv("BENCH_INGEST_CPU_SECONDS", 10, 600);
const SRT_BASE = 23000 + 10 * Math.floor(Math.random() * 300);
const PROFILES = [{ name: "360p", width: 640, height: 360, fps: 30, bitrate: 800_000 }];
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

type Protocol = "rtmp" | "whip" | "srt";
interface Publisher {
  /** WHIP only: POST → 201, ms. */
  answerMs?: number;
  stop(): Promise<void>;
}

let server: ServerProcess | undefined;
const children = new Set<ChildProcess>();
exitOnSignal(() => {
  for (const c of children) c.kill("SIGKILL");
  killPids(childPids(server?.pid));
  void server?.kill();
});




async function api(method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(server!.apiUrl + p, {
    method,
    headers: { authorization: `Bearer ${server!.key}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return res.status === 204 ? undefined : res.json();
}

function srtCaller(url: string, seconds: number): ChildProcess {
  const child = spawn(FFMPEG, [
    "-hide_banner", "-nostdin", "-loglevel", "error",
    "-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30", "-pix_fmt", "yuv420p", "-b:v", "1000k",
    "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", url,
  ], { stdio: "ignore" });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

async function publish(protocol: Protocol, stream: any, seconds: number): Promise<Publisher> {
  const origin = server!.apiUrl.replace(/\/api$/, "");
  if (protocol === "rtmp") {
    const push = pushTestStream(`${server!.rtmpUrl}/${stream.streamKey}`, { seconds, size: "640x360", codec: ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30", "-pix_fmt", "yuv420p", "-b:v", "1000k"] });
    children.add(push.child);
    return { stop: async () => void (push.child.kill("SIGKILL"), await push.exited) };
  }
  if (protocol === "srt") {
    const child = srtCaller(stream.srtUrl, seconds);
    return { stop: async () => void child.kill("SIGKILL") };
  }
  const client: WhipClient = await whipPublish(`${origin}/whip`, { bearer: stream.streamKey, seconds });
  if (client.status !== 201) throw new Error(`WHIP answered ${client.status}: ${client.body}`);
  return { answerMs: client.answerMs, stop: async () => void (await client.stop()) };
}

/** isActive turns true once every rendition has its first segment: the URL plays (the playlist of the last session still answers before). */
async function playable(stream: any, since: number): Promise<number> {
  for (;;) {
    if ((await api("GET", `/stream/${stream.id}`)).isActive) return performance.now() - since;
    if (performance.now() - since > 30_000) throw new Error(`${stream.name}: not playable after 30 s`);
    await sleep(25);
  }
}

async function idle(stream: any): Promise<void> {
  for (let i = 0; i < 200 && (await api("GET", `/stream/${stream.id}`)).isActive; i++) await sleep(100);
}

/** CPU seconds of onair's process and of the bridge ffmpeg of this stream (none for RTMP). */
function cpuSample(protocol: Protocol, stream: any): { onair: number; bridges: number } {
  const pids = spawnSync("pgrep", ["-P", String(server!.pid)], { encoding: "utf8" }).stdout.split("\n").filter(Boolean).map(Number);
  const srtPort = protocol === "srt" ? new URL(stream.srtUrl).port : undefined;
  let bridges = 0;
  for (const pid of pids) {
    let cmd = "";
    try {
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    const ours = protocol === "whip" ? /\.sdp\0/.test(cmd) : protocol === "srt" ? cmd.includes(`srt://127.0.0.1:${srtPort}?`) : false;
    if (ours) bridges += processCpuSeconds(pid) ?? 0;
  }
  return { onair: processCpuSeconds(server!.pid) ?? 0, bridges };
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-ingest-"));
  server = await startServerProcess(dataDir, {
    LOG_LEVEL: "warn", WEBRTC_BIND_ADDRESS: "127.0.0.1", SRT_PORTS: `${SRT_BASE}-${SRT_BASE + 9}`, SRT_PUBLIC_HOST: "127.0.0.1",
  });
  const protocols: Protocol[] = ["rtmp", "whip", "srt"];
  const streams: Record<Protocol, any> = {} as any;
  for (const p of protocols) streams[p] = await api("POST", "/stream", { name: `bench ${p}`, profiles: PROFILES });
  await sleep(2000); // SRT listeners armed
  const toPlayable: Record<Protocol, number[]> = { rtmp: [], whip: [], srt: [] };
  const answers: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const p of protocols) {
      const since = performance.now();
      const pub = await publish(p, streams[p], 30);
      if (pub.answerMs !== undefined) answers.push(pub.answerMs);
      toPlayable[p].push(await playable(streams[p], since));
      await pub.stop();
      await idle(streams[p]);
      await sleep(p === "srt" ? 1000 : 300);
    }
  }
  const cpu: Record<Protocol, { onair: number; bridges: number }> = {} as any;
  for (const p of protocols) {
    const pub = await publish(p, streams[p], CPU_SECONDS + 20);
    await playable(streams[p], performance.now());
    await sleep(3000);
    const a = cpuSample(p, streams[p]);
    await sleep(CPU_SECONDS * 1000);
    const b = cpuSample(p, streams[p]);
    cpu[p] = { onair: (b.onair - a.onair) / CPU_SECONDS, bridges: (b.bridges - a.bridges) / CPU_SECONDS };
    await pub.stop();
    await idle(streams[p]);
    await sleep(1000);
  }
  await stopServerProcess(server);
  fs.rmSync(dataDir, { recursive: true, force: true });

  const base = median(toPlayable.rtmp);
  console.log(`ingest protocols: ${ROUNDS} rounds, ${os.cpus().length} cores, ${ffmpegVersion(FFMPEG)}; one 360p rendition; RTMP is the baseline\n`);
  console.log(formatTable(
    ["protocol", "publish→playable median ms", "min", "max", "× RTMP", "onair CPU %/stream", "bridge ffmpeg CPU %", "Δ onair CPU vs RTMP, % of a core"],
    protocols.map((p) => [
      p,
      fixed(median(toPlayable[p]), 0),
      fixed(Math.min(...toPlayable[p]), 0),
      fixed(Math.max(...toPlayable[p]), 0),
      fixed(median(toPlayable[p]) / base, 2),
      fixed(cpu[p].onair * 100, 1),
      fixed(cpu[p].bridges * 100, 1),
      fixed((cpu[p].onair - cpu.rtmp.onair) * 100, 1),
    ]),
  ));
  console.log(`\nWHIP POST → 201: median ${fixed(median(answers), 0)} ms (min ${fixed(Math.min(...answers), 0)}, max ${fixed(Math.max(...answers), 0)}) over ${answers.length}`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    for (const c of children) c.kill("SIGKILL");
    void stopServerProcess(server).finally(() => process.exit(1));
  },
);
