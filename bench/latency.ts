// Glass-to-glass latency, measured as a viewer sees it: a wall-clock code drawn into every
// pushed frame, read back from the frames headless Chromium presents (requestVideoFrameCallback
// → canvas → the code's bits), against the same clock. Not PROGRAM-DATE-TIME, which only says
// what the packager believes.
//
// Setups in the same run, one after the other on the same source:
//   onair     the code source → ffmpeg (x264 zerolatency) → RTMP → onair (its own process, the
//             source copied, LL-HLS) → onair's player page kept on LL-HLS (hls.js in low-latency
//             mode)
//   webrtc    the same into a stream with a two-rung ladder → onair's player page over WebRTC
//             (WHEP); with publish → first WebRTC frame (a WHEP client in this process asking
//             from the encoder's start until a keyframe arrives)
//   baseline  the same source and encoder → ffmpeg's own standard HLS, 1 s segments, served by a
//             bare static server → hls.js with its defaults
// and, to say where WebRTC's time goes, two setups read by ffmpeg instead of a browser (each
// frame's code read as the decoder puts it out, no jitter buffer, no display):
//   webrtc (client)  the webrtc setup's stream, played by a WHEP client here (node-datachannel)
//   bare             the same source's FLV over TCP straight into the decoder: encoder and decoder
//                    alone, what no server path can beat
// With BENCH_PLAYER_BEFORE=<git revision> (for example the main a change starts from), onair is
// measured a second time with that revision's public/player.js served in place of today's, so a
// player change is compared before/after in one run on the same machine.
// For onair it also measures publish → playable (the encoder starting to the master playlist
// answering) and, midway, injects a stall (the player's HLS requests held 1.5 s for 1.6 s) and
// measures how far latency is from where it was before, 10 s later.
//
// Settings: BENCH_LATENCY_SECONDS (60) measured per setup after BENCH_WARMUP_SECONDS (10);
// the target run is BENCH_LATENCY_SECONDS=300.
// BENCH_RTT_MS=0,80,150 (round trips in ms) measures viewers far away instead: onair's player
// page and hls.js's defaults through a delay proxy per round trip, and a DVR stream beside the
// plain one at 0 ms (bench/latencyFar.ts says how). Unset, the setups above run.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import express from "express";
import type { Browser } from "playwright-core";
import { startServerProcess, type ServerProcess } from "../test/helpers/serverProcess";
import { depacketizeH264, inSequenceOrder, parseRtp, whepPlay } from "../test/helpers/whepClient";
import { BAND_X, BAND_Y, BITS, BLOCK, CHROMIUM, FFMPEG, HEIGHT, RECENT, WIDTH, freePort, hlsJsPage, launchChromium, median, pct, sleep, startSource, untilPlayable, watch } from "./glassClock";
import { farMain } from "./latencyFar";
import { exitOnSignal, ffmpegVersion, fixed, formatTable, nonNegativeIntListFromEnv, positiveIntFromEnv } from "./lib";

const STALL_HOLD_MS = 1500;
const STALL_FOR_MS = 1600;
const RECOVERY_AFTER_MS = 10_000;

interface Result {
  name: string;
  latencies: number[];
  /** Undefined where nothing plays the frames out (a decoder read directly). */
  stalls?: number;
  playableMs?: number;
  /** The publish admitted (the session started) to playable, from the server's log. */
  sessionToPlayableMs?: number;
  /** Latency 10 s after the injected stall, minus latency before it (ms). */
  recoveryMs?: number;
  /** The player's own live target at the end (s). */
  target?: number;
  /** Encoder start → the first WebRTC frame a WHEP client receives (ms). */
  firstFrameMs?: number;
}

/** The ladder the WebRTC setup plays (the source is 640x360): frames from the encoder, not the source. */
const WEBRTC_PROFILES = [
  { name: "360p", bitrate: 1_000_000, fps: 30, width: 640, height: 360 },
  { name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 },
];

/**
 * onair's player page over WebRTC on a ladder; publish → first WebRTC frame is measured by a
 * WHEP client here (node-datachannel), offering from the encoder's start until it is answered
 * and its first video packet of a keyframe arrives.
 */
async function webrtcRun(browser: Browser, warmupS: number, seconds: number): Promise<Result[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-latency-"));
  let server: ServerProcess | undefined;
  let source: Awaited<ReturnType<typeof startSource>> | undefined;
  try {
    server = await startServerProcess(dataDir, { LOG_LEVEL: "info", WEBRTC_BIND_ADDRESS: "127.0.0.1" });
    const key = server.key!;
    const res = await fetch(`${server.apiUrl}/stream`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ name: "latency bench (WebRTC)", profiles: WEBRTC_PROFILES }) });
    const stream = (await res.json()) as { streamKey: string; playbackId: string };
    const base = server.apiUrl.replace(/\/api$/, "");
    source = startSource(["-f", "flv", `${server.rtmpUrl}/${stream.streamKey}`]);
    const firstFrameMs = await firstWebRtcFrame(`${base}/whep/${stream.playbackId}`, source.startedAt);
    const playableMs = await untilPlayable(base, stream.playbackId, source.startedAt);
    const page = await browser.newPage({ bypassCSP: true });
    await page.goto(`${base}/play/${stream.playbackId}`);
    await page.waitForFunction(`document.getElementById("player").dataset.protocol === "webrtc"`, undefined, { timeout: 30_000 });
    const { latencies, stalls } = await watch(page, "onair-webrtc", warmupS, seconds);
    const protocol = await page.evaluate(`document.getElementById("player").dataset.protocol`);
    if (protocol !== "webrtc") throw new Error(`the page left WebRTC (now ${String(protocol)})`);
    await page.close();
    const client = await webrtcClientLatencies(`${base}/whep/${stream.playbackId}`, Math.min(seconds, CLIENT_SECONDS));
    return [
      { name: "onair (WebRTC, player page, 2-rung ladder)", latencies: latencies.map((l) => l[1]), stalls, playableMs, firstFrameMs },
      { name: "  the same, WHEP client here, decoded", latencies: client },
    ];
  } finally {
    await source?.stop();
    await server?.kill();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** How long the decoded-clock setups are read (s): their spread is small, a minute says it all. */
const CLIENT_SECONDS = 60;

/**
 * An ffmpeg that decodes `input` and reads the code off each frame as it comes out of the
 * decoder: the latencies (ms) of the frames read until `stop`. low_delay: no frame threading.
 */
function decodedClock(input: string[]): { child: ChildProcess; latencies: number[]; stop(): void } {
  const child = spawn(FFMPEG, [
    "-hide_banner", "-loglevel", "error", "-nostdin", "-flags", "low_delay", "-fflags", "nobuffer", ...input,
    // passthrough: each decoded frame once, as it comes (no frame rate to duplicate or drop for).
    "-an", "-vf", `scale=${WIDTH}:${HEIGHT},crop=${WIDTH}:${BAND_Y + BLOCK}:0:0`, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1",
  ], { stdio: ["pipe", "pipe", "inherit"] });
  const size = WIDTH * (BAND_Y + BLOCK);
  const latencies: number[] = [];
  let pending = Buffer.alloc(0);
  child.stdout!.on("data", (chunk: Buffer) => {
    const now = Date.now();
    pending = Buffer.concat([pending, chunk]);
    for (; pending.length >= size; pending = pending.subarray(size)) {
      const latency = (now - readClock(pending.subarray(0, size)) + 2 ** BITS) % 2 ** BITS;
      if (latency < 30_000) latencies.push(latency);
    }
  });
  child.stdin!.on("error", () => undefined);
  return { child, latencies, stop: () => void child.kill("SIGKILL") };
}

/** The code in a gray frame's top rows (the inverse of drawClock, pure): ms modulo 2^BITS. */
function readClock(gray: Buffer): number {
  let code = 0;
  for (let bit = 0; bit < BITS; bit++) code = code * 2 + (gray[(BAND_Y + BLOCK / 2) * WIDTH + BAND_X + bit * BLOCK + BLOCK / 2]! > 128 ? 1 : 0);
  for (let shift = 1; shift < BITS; shift *= 2) code ^= code >> shift;
  return code;
}

/** Whether an Annex B access unit holds an IDR slice (NAL unit type 5), whatever its nal_ref_idc. */
function hasIdr(annexB: Buffer): boolean {
  for (let at = annexB.indexOf(START); at !== -1; at = annexB.indexOf(START, at + 3)) if ((annexB[at + 3]! & 0x1f) === 5) return true;
  return false;
}
const START = Buffer.from([0, 0, 1]);

/** An access unit delimiter (H.264 7.3.2.4): ends the unit before it for ffmpeg's parser at once. */
const AUD = Buffer.from([0, 0, 0, 1, 9, 0xf0]);

/**
 * A WHEP client here plays `url` for `seconds`; each frame (the RTP packets up to the marker
 * bit) goes to a decoder as it completes, from the first keyframe on.
 */
async function webrtcClientLatencies(url: string, seconds: number): Promise<number[]> {
  const decoder = decodedClock(["-probesize", "32", "-analyzeduration", "0", "-f", "h264", "-i", "pipe:0"]);
  let frame: Buffer[] = [];
  let keyed = false;
  const onVideoPacket = (packet: Buffer) => {
    frame.push(packet);
    if (!(packet[1]! & 0x80)) return;
    // By sequence number: a fragmented unit missing a packet is dropped, not spliced.
    const annexB = depacketizeH264(inSequenceOrder(frame.flatMap((p) => parseRtp(p) ?? [])));
    frame = [];
    keyed ||= hasIdr(annexB);
    // Without the delimiter, ffmpeg's parser would wait for the next frame's start to end this one.
    if (keyed) decoder.child.stdin!.write(Buffer.concat([annexB, AUD]));
  };
  const viewer = await whepPlay(url, { onVideoPacket }).catch((err: unknown) => {
    decoder.stop();
    throw err;
  });
  try {
    if (viewer.status !== 201) throw new Error(`the WHEP client was answered ${viewer.status}: ${viewer.body}`);
    await sleep(3000);
    decoder.latencies.length = 0;
    await sleep(seconds * 1000);
    return decoder.latencies.slice();
  } finally {
    await viewer.stop();
    decoder.stop();
  }
}

/** The source's FLV over TCP straight into the decoder (see the header). */
async function bareRun(seconds: number): Promise<Result> {
  const port = await freePort();
  // Probing delays the start only; the warm-up below is longer than it.
  const decoder = decodedClock(["-analyzeduration", "500000", "-f", "flv", "-i", `tcp://127.0.0.1:${port}?listen=1`]);
  await sleep(500);
  const source = startSource(["-f", "flv", `tcp://127.0.0.1:${port}`]);
  try {
    await sleep(3000);
    decoder.latencies.length = 0;
    await sleep(seconds * 1000);
    return { name: "bare (encoder → FLV over TCP → decoder)", latencies: decoder.latencies.slice() };
  } finally {
    await source.stop();
    decoder.stop();
  }
}

/** ms from `startedAt` to the first video packet of a keyframe a WHEP client receives. */
async function firstWebRtcFrame(url: string, startedAt: number): Promise<number> {
  for (;;) {
    if (Date.now() - startedAt > 30_000) throw new Error("no WebRTC frame within 30 s of the encoder's start");
    // The offer leaves a few ms after this (host candidates only): counted from here.
    const asked = Date.now();
    const viewer = await whepPlay(url).catch(() => undefined);
    if (!viewer || viewer.status !== 201) {
      await sleep(20);
      continue;
    }
    try {
      while (viewer.firstFrameMs === undefined) {
        if (Date.now() - asked > 10_000) throw new Error("answered, but no keyframe within 10 s");
        await sleep(5);
      }
      return asked + viewer.firstFrameMs - startedAt;
    } finally {
      await viewer.stop();
    }
  }
}

/** `player`: another player.js to serve in place of this one (a revision's, for before/after). */
async function onairRun(browser: Browser, warmupS: number, seconds: number, player?: { label: string; source: string }): Promise<Result> {
  const kind = player ? `onair@${player.label}` : "onair";
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-latency-"));
  let server: ServerProcess | undefined;
  let source: Awaited<ReturnType<typeof startSource>> | undefined;
  try {
    server = await startServerProcess(dataDir, { LOG_LEVEL: "info" });
    const key = server.key!;
    const api = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${server!.apiUrl}${p}`, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
      return res.json() as Promise<any>;
    };
    const stream = await api("POST", "/stream", { name: "latency bench" });
    const base = server.apiUrl.replace(/\/api$/, "");
    source = startSource(["-f", "flv", `${server.rtmpUrl}/${stream.streamKey}`]);
    const playableMs = await untilPlayable(base, stream.playbackId, source.startedAt);
    const page = await browser.newPage({ bypassCSP: true });
    if (player) await page.route("**/assets/player.js", (route) => route.fulfill({ contentType: "text/javascript; charset=utf-8", body: player.source }));
    // LL-HLS: the page would play WebRTC first (the webrtc setup measures that).
    await page.goto(`${base}/play/${stream.playbackId}?protocol=hls`);
    let recoveryMs: number | undefined;
    const { latencies, stalls, target } = await watch(page, kind, warmupS, seconds, async () => {
      const recent = (await page.evaluate(RECENT)) as number[];
      const beforeMs = median(recent);
      await page.route("**/hls/**", async (route) => {
        await sleep(STALL_HOLD_MS);
        // Let go by unroute meanwhile: already on its way.
        await route.continue().catch(() => undefined);
      });
      await sleep(STALL_FOR_MS);
      await page.unroute("**/hls/**");
      await sleep(RECOVERY_AFTER_MS);
      const after = (await page.evaluate(RECENT)) as number[];
      recoveryMs = median(after) - beforeMs;
    });
    await page.close();
    const lines = server.log().split("\n");
    const problems = lines.filter((l) => /"level":(50|60)/.test(l));
    if (problems.length) console.log(`onair logged errors:\n${problems.slice(-5).join("\n")}`);
    // The server's own view: the publish admitted (its session started) to HLS playable.
    const at = (msg: string) => Number(/"time":(\d+)/.exec(lines.find((l) => l.includes(`"msg":"${msg}"`)) ?? "")?.[1]);
    const sessionToPlayableMs = at("stream is live: HLS playable") - at("live session started");
    const name = player ? `onair (LL-HLS, player page at ${player.label})` : "onair (LL-HLS, player page)";
    return { name, latencies: latencies.map((l) => l[1]), stalls, playableMs, sessionToPlayableMs, recoveryMs, target };
  } finally {
    await source?.stop();
    await server?.kill();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function baselineRun(browser: Browser, warmupS: number, seconds: number): Promise<Result> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-baseline-"));
  const app = express();
  const hlsJs = require.resolve("hls.js/dist/hls.min.js");
  app.get("/", (_req, res) => res.type("html").send(hlsJsPage("/hls/index.m3u8", "/hls.min.js")));
  app.get("/hls.min.js", (_req, res) => res.sendFile(hlsJs));
  app.use("/hls", express.static(dir, { setHeaders: (res, file) => file.endsWith(".m3u8") && res.setHeader("cache-control", "no-cache") }));
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const source = startSource(["-f", "hls", "-hls_time", "1", "-hls_list_size", "6", "-hls_flags", "delete_segments+independent_segments+temp_file", path.join(dir, "index.m3u8")]);
  try {
    let playableMs: number | undefined;
    for (;;) {
      if (fs.existsSync(path.join(dir, "index.m3u8"))) {
        playableMs = Date.now() - source.startedAt;
        break;
      }
      await sleep(10);
    }
    const page = await browser.newPage({ bypassCSP: true });
    await page.goto(base);
    const { latencies, stalls } = await watch(page, "baseline", warmupS, seconds);
    await page.close();
    return { name: "baseline (ffmpeg HLS 1 s, hls.js defaults)", latencies: latencies.map((l) => l[1]), stalls, playableMs };
  } finally {
    await source.stop();
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (apt-get install chromium)`);
  const seconds = positiveIntFromEnv("BENCH_LATENCY_SECONDS", 60);
  const warmup = positiveIntFromEnv("BENCH_WARMUP_SECONDS", 10);
  console.log(`bench:latency — ${os.cpus().length} cores, ${ffmpegVersion(FFMPEG)}, Chromium headless, ${seconds} s measured per setup after ${warmup} s\n`);
  const browser = await launchChromium();
  exitOnSignal(() => void browser.close());
  try {
    // Viewers far away instead (bench/latencyFar.ts): set, it is the run.
    if (process.env.BENCH_RTT_MS) return await farMain(browser, nonNegativeIntListFromEnv("BENCH_RTT_MS", [], 5000), warmup, seconds);
    const beforeRev = process.env.BENCH_PLAYER_BEFORE;
    const before = beforeRev
      ? { label: beforeRev, source: execFileSync("git", ["show", `${beforeRev}:public/player.js`], { cwd: path.resolve(__dirname, ".."), encoding: "utf8" }) }
      : undefined;
    const onair = await onairRun(browser, warmup, seconds);
    const onairBefore = before ? await onairRun(browser, warmup, seconds, before) : undefined;
    const [webrtc, webrtcClient] = await webrtcRun(browser, warmup, seconds);
    const baseline = await baselineRun(browser, warmup, seconds);
    const bare = await bareRun(Math.min(seconds, CLIENT_SECONDS));
    const rows = [onair, ...(onairBefore ? [onairBefore] : []), webrtc!, webrtcClient!, baseline, bare].map((r) => [
      r.name,
      String(r.latencies.length),
      fixed(median(r.latencies) / 1000, 3),
      fixed(pct(r.latencies, 95) / 1000, 3),
      fixed(Math.max(...r.latencies) / 1000, 3),
      r.stalls !== undefined ? String(r.stalls) : "",
      r.playableMs !== undefined ? fixed(r.playableMs / 1000, 2) : "",
      r.sessionToPlayableMs !== undefined ? fixed(r.sessionToPlayableMs / 1000, 2) : "",
      r.recoveryMs !== undefined ? fixed(r.recoveryMs / 1000, 3) : "",
      r.target !== undefined ? fixed(r.target, 2) : "",
      r.firstFrameMs !== undefined ? fixed(r.firstFrameMs / 1000, 2) : "",
    ]);
    console.log(formatTable(["setup", "frames", "p50 s", "p95 s", "max s", "stalls", "encoder start→playable s", "publish→playable s", "after stall +s", "target at end s", "encoder start→first WebRTC frame s"], rows));
    const ratio = (a: number, b: number) => fixed(a / b, 2);
    console.log(`\nonair / baseline: p50 ${ratio(median(onair.latencies), median(baseline.latencies))}×, p95 ${ratio(pct(onair.latencies, 95), pct(baseline.latencies, 95))}×`);
    console.log(`webrtc / baseline: p50 ${ratio(median(webrtc!.latencies), median(baseline.latencies))}×; webrtc / onair LL-HLS: p50 ${ratio(median(webrtc!.latencies), median(onair.latencies))}×`);
    const ms = (x: number) => `${Math.round(x)} ms`;
    console.log(`where WebRTC's p50 goes: encoder and decoder alone (bare) ${ms(median(bare.latencies))}, onair's path on top ${ms(median(webrtcClient!.latencies) - median(bare.latencies))}, the browser (jitter buffer, decode, display) ${ms(median(webrtc!.latencies) - median(webrtcClient!.latencies))}; webrtc client / bare p50 ${ratio(median(webrtcClient!.latencies), median(bare.latencies))}×`);
    if (onairBefore) console.log(`onair / onair with the player at ${before!.label}: p50 ${ratio(median(onair.latencies), median(onairBefore.latencies))}× (${fixed((median(onair.latencies) - median(onairBefore.latencies)) / 1000, 3)} s), p95 ${ratio(pct(onair.latencies, 95), pct(onairBefore.latencies, 95))}×`);
    console.log("targets: onair p50 ≤ 0.85 s, p95 ≤ 1.0 s, 0 stalls (the injected one aside), within 0.15 s 10 s after a stall, publish→playable ≤ 1.5 s; webrtc p50 ≤ 0.30 s, p95 ≤ 0.40 s, 0 stalls");
    console.log("(the stall column counts the injected stall; 'after stall' is latency 10 s after it minus latency before it;");
    console.log(" encoder start→playable includes the source encoder's own start; publish→playable is the server's log: session started → HLS playable)");
  } finally {
    await browser.close();
  }
}

// Exits when done: the WHEP clients' libdatachannel threads keep the process alive after their
// peers close (as jest.config.js says of the test suites), and it would never end by itself.
main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
