// Multistream benchmark: `npm run bench:multistream`.
//
// What one multistream push costs, next to what its session already costs, measured in the same
// run on one real onair server in this process:
//   - N streams (BENCH_STREAMS, default 1) each publish a 720p30 H.264 + AAC clip (looped, paced
//     by -re, as OBS would send it), transcoded into the default ladder (720p, 480p, 360p);
//   - each stream references two targets: one `source` push (the published stream copied from
//     the local RTMP server) and one rendition push (BENCH_RENDITION, default `720p`, the
//     ladder's biggest: copied from that rendition's live HLS);
//   - every target is a local listening ffmpeg that discards what it receives (`-c copy -f null`):
//     destinations are the bench's cost, not onair's, and are not counted.
// Once every push is connected (multistream.connected at a webhook receiver of the bench's own)
// and a short warm-up has passed, the CPU time (user + system, /proc/<pid>/stat) of the
// session's pipeline ffmpeg (the baseline), of the source push and of the rendition push is read
// at the start and at the end of a window of BENCH_WINDOW seconds (default 20), and reported as
// % of one core and as a fraction of the pipeline. A push that restarts during the window fails
// the bench (its retries would be measured instead of its steady cost).
//
// Settings (environment): BENCH_STREAMS (default 1), BENCH_WINDOW seconds (default 20),
// BENCH_SEGMENT_SECONDS (default 2), BENCH_RENDITION (default 720p). Linux only (/proc).

import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../src/config";
import { createLogger } from "../src/log";
import { loadLadder } from "../src/media/ladder";
import { startServer, type RunningServer } from "../src/server";
import { Child, exitOnSignal, ffmpegVersion, formatTable, makeClip, positiveIntFromEnv, processCpuSeconds, running } from "./lib";

const CLIP_SIZE = "1280x720";
const CLIP_FPS = 30;
const CLIP_SECONDS = 20;
const CONNECT_TIMEOUT_MS = 30_000;
/** After connecting, a push first sends the RTMP server's cached GOP (or its first segment) in a burst. */
const WARMUP_MS = 3000;

interface Settings {
  streams: number;
  windowSeconds: number;
  segmentSeconds: number;
  rendition: string;
}


function readSettings(): Settings {
  return {
    streams: positiveIntFromEnv("BENCH_STREAMS", 1, 16),
    windowSeconds: positiveIntFromEnv("BENCH_WINDOW", 20),
    segmentSeconds: positiveIntFromEnv("BENCH_SEGMENT_SECONDS", 2, 10),
    rendition: process.env.BENCH_RENDITION || "720p",
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));




async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Listening on 127.0.0.1:port, read from the kernel: a listening ffmpeg takes one connection only. */
function listening(port: number): boolean {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  return fs.readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1).some((l) => {
    const f = l.trim().split(/\s+/);
    return f[1]?.endsWith(hex) && f[3] === "0A";
  });
}

/** A destination that takes one publisher and throws the media away. */
async function startDestination(ffmpeg: string, name: string): Promise<{ url: string; child: Child }> {
  const port = await freePort();
  const url = `rtmp://127.0.0.1:${port}/app/${name}`;
  const child = new Child(`destination ${name}`, ffmpeg, ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "error", "-listen", "1", "-i", url, "-c", "copy", "-f", "null", "-"]);
  const deadline = Date.now() + 10_000;
  while (!listening(port)) {
    if (Date.now() > deadline) throw new Error(`${child.describe()} is not listening after 10 s`);
    await sleep(20);
  }
  return { url, child };
}

// ---------------------------------------------------------------------------------------------




function commandLine(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    return [];
  }
}

// ---------------------------------------------------------------------------------------------

interface BenchStream {
  name: string;
  id: string;
  playbackId: string;
  /** The three processes measured, found once every push is connected. */
  pids?: { pipeline: number; source: number; rendition: number };
}

let serverForCleanup: RunningServer | undefined;
let workDir: string | undefined;

function killEverything(): void {
  for (const c of running) c.signal("SIGKILL");
  for (const pid of serverForCleanup?.processes.pids() ?? []) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
}


async function main(): Promise<void> {
  const settings = readSettings();
  exitOnSignal(killEverything);
  const ladder = loadLadder("default");
  if (!ladder.some((p) => p.name === settings.rendition)) {
    throw new Error(`BENCH_RENDITION=${settings.rendition} is not in the default ladder (${ladder.map((p) => p.name).join(", ")})`);
  }
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-multistream-"));
  const config = loadConfig({
    DATA_DIR: path.join(workDir, "data"),
    PORT: "0",
    RTMP_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    HLS_SEGMENT_SECONDS: String(settings.segmentSeconds),
    // The destinations and the receiver are this bench's own, on loopback.
    DESTINATION_ALLOW_HOSTS: "127.0.0.1,localhost",
  });
  const server = await startServer(config, createLogger("silent"));
  serverForCleanup = server;
  const events: { event: string; targetId: string; error?: string }[] = [];
  const receiver = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString()));
    req.on("end", () => {
      const body = JSON.parse(raw) as { event: string; payload: { target?: { id: string }; error?: string } };
      if (body.payload.target) events.push({ event: body.event, targetId: body.payload.target.id, error: body.payload.error });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));

  try {
    if (!server.ffmpeg || !server.firstUser) throw new Error("the server found no ffmpeg, or the data directory was not empty");
    const ffmpeg = server.ffmpeg.path;
    const apiUrl = `http://127.0.0.1:${server.port}/api`;
    const api = async (method: string, p: string, body: unknown) => {
      const res = await fetch(apiUrl + p, { method, headers: { authorization: `Bearer ${server.firstUser!.apiKey}`, "content-type": "application/json" }, body: JSON.stringify(body) });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${p} returned ${res.status}: ${text}`);
      return JSON.parse(text) as { id: string; streamKey?: string; playbackId?: string };
    };
    const cpus = os.cpus();
    process.stdout.write(
      [
        "",
        "onair multistream benchmark",
        `  machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? "unknown"}), load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; node ${process.version}; ` +
          ffmpegVersion(ffmpeg),
        `  settings: BENCH_STREAMS=${settings.streams}, BENCH_WINDOW=${settings.windowSeconds} s, segment ${settings.segmentSeconds} s, rendition push: ${settings.rendition}`,
        `  each stream: ${CLIP_SIZE}@${CLIP_FPS} H.264 2.5 Mb/s + AAC in; ladder ${ladder.map((p) => p.name).join("/")}; one source push and one ${settings.rendition} push to local RTMP listeners`,
        "",
      ].join("\n"),
    );

    process.stderr.write("making the test clip\n");
    const clip = await makeClip(ffmpeg, workDir, { size: CLIP_SIZE, fps: CLIP_FPS, seconds: CLIP_SECONDS });
    await api("POST", "/webhook", { name: "bench", url: `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/` });

    const streams: BenchStream[] = [];
    for (let i = 1; i <= settings.streams; i++) {
      const source = await startDestination(ffmpeg, `source-${i}`);
      const rendition = await startDestination(ffmpeg, `rendition-${i}`);
      const tSource = await api("POST", "/multistream/target", { url: source.url, name: `source ${i}` });
      const tRendition = await api("POST", "/multistream/target", { url: rendition.url, name: `${settings.rendition} ${i}` });
      const s = await api("POST", "/stream", {
        name: `bench ${i}`,
        profiles: ladder,
        multistream: { targets: [{ id: tSource.id, profile: "source" }, { id: tRendition.id, profile: settings.rendition }] },
      });
      streams.push({ name: `stream ${i}`, id: s.id, playbackId: s.playbackId! });
      new Child(`publisher ${i}`, ffmpeg, ["-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", clip, "-c", "copy", "-f", "flv", `rtmp://127.0.0.1:${server.rtmpPort}/live/${s.streamKey}`]);
    }

    process.stderr.write(`waiting for ${streams.length * 2} pushes to connect\n`);
    const deadline = Date.now() + CONNECT_TIMEOUT_MS;
    while (events.filter((e) => e.event === "multistream.connected").length < streams.length * 2) {
      if (Date.now() > deadline) {
        throw new Error(`not every push connected within ${CONNECT_TIMEOUT_MS / 1000} s; events: ${JSON.stringify(events)}; still running: ${[...running].map((c) => c.describe()).join("; ")}`);
      }
      await sleep(100);
    }
    for (const s of streams) {
      const pid = (match: (args: string[]) => boolean) => server.processes.pids().find((p) => match(commandLine(p)));
      // Named by their inputs: the pipeline and the source push read the stream on the local RTMP
      // server (under the stream's id), the rendition push its live HLS; the destination is in
      // no argv (onair publishes rtmp itself).
      const local = (a: string[]) => a.some((x) => x.startsWith("rtmp://") && x.endsWith(`/${s.id}`));
      const pipeline = pid((a) => local(a) && a.includes("-filter_complex"));
      const source = pid((a) => local(a) && a.includes("-flvflags"));
      const rendition = pid((a) => a.includes("-flvflags") && a.includes("-live_start_index") && a.some((x) => x.includes(`/${s.playbackId}/`)));
      if (!pipeline || !source || !rendition) throw new Error(`${s.name}: cannot find its processes (pipeline ${pipeline}, source push ${source}, rendition push ${rendition})`);
      s.pids = { pipeline, source, rendition };
    }
    await sleep(WARMUP_MS);

    process.stderr.write(`measuring for ${settings.windowSeconds} s\n`);
    const all = streams.flatMap((s) => Object.values(s.pids!));
    const before = new Map(all.map((p) => [p, processCpuSeconds(p)]));
    const nodeBefore = process.cpuUsage();
    const started = performance.now();
    await sleep(settings.windowSeconds * 1000);
    const wall = (performance.now() - started) / 1000;
    const nodeCpu = process.cpuUsage(nodeBefore);
    const percent = new Map(
      all.map((p) => {
        const a = before.get(p);
        const b = processCpuSeconds(p);
        if (a === undefined || b === undefined) throw new Error(`process ${p} ended during the window (a push restarted?); events: ${JSON.stringify(events.slice(-6))}`);
        return [p, (100 * (b - a)) / wall];
      }),
    );
    const failures = events.filter((e) => e.event === "multistream.error");
    if (failures.length > 0) throw new Error(`pushes failed during the run: ${JSON.stringify(failures)}`);

    const pct = (p: number) => `${percent.get(p)!.toFixed(1)} %`;
    const ratio = (p: number, base: number) => `${((100 * percent.get(p)!) / Math.max(0.01, percent.get(base)!)).toFixed(1)} %`;
    const rows = streams.map((s) => {
      const { pipeline, source, rendition } = s.pids!;
      return [s.name, pct(pipeline), pct(source), pct(rendition), ratio(source, pipeline), ratio(rendition, pipeline)];
    });
    const mean = (key: "pipeline" | "source" | "rendition") => streams.reduce((a, s) => a + percent.get(s.pids![key])!, 0) / streams.length;
    if (streams.length > 1) {
      rows.push([
        "mean",
        `${mean("pipeline").toFixed(1)} %`,
        `${mean("source").toFixed(1)} %`,
        `${mean("rendition").toFixed(1)} %`,
        `${((100 * mean("source")) / mean("pipeline")).toFixed(1)} %`,
        `${((100 * mean("rendition")) / mean("pipeline")).toFixed(1)} %`,
      ]);
    }
    process.stdout.write(
      `CPU over ${wall.toFixed(1)} s, % of one core (user + system, /proc/<pid>/stat):\n` +
        formatTable(["stream", "pipeline ffmpeg (baseline)", "source push", `${settings.rendition} push`, "source push / pipeline", `${settings.rendition} push / pipeline`], rows) +
        `\n  node process (local RTMP server, HLS packager, the pushes' RTMP publishing, API, bench polling): ${((100 * (nodeCpu.user + nodeCpu.system)) / 1e6 / wall).toFixed(1)} % of one core\n\n`,
    );
  } finally {
    for (const c of [...running].filter((c) => c.name.startsWith("publisher"))) await c.stop();
    await server.stop();
    await Promise.all([...running].map((c) => c.stop(2000)));
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:multistream failed: ${err instanceof Error ? err.message : String(err)}\n`);
  killEverything();
  process.exit(1);
});
