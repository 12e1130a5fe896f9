// Glass-to-glass for viewers far away: bench/latency.ts's clock and meter (bench/glassClock.ts),
// with every byte between the browser and the servers held by a delay proxy
// (test/helpers/delayProxy.ts: the same delay each way, the TCP handshake included).
// `BENCH_RTT_MS=0,80,150 npm run bench:latency` runs it instead of the usual setups.
//
// One onair (its own process) and one encoder (x264 zerolatency, pushed over RTMP); for each
// round trip, one after the other, on the same stream:
//   onair     onair's player page, /play/<id>?protocol=hls, through the proxy
//   hls.js    a bare page with hls.js's defaults (as bench/latency.ts's baseline) on onair's own
//             master playlist through the same proxy; the page comes from a little server here,
//             behind a proxy of the same round trip: an embedder's page on its own origin
// and at 0 ms only, beside onair's: "onair, DVR" — the same page on a stream created with a DVR
// window (dvrWindow 120 s), which the page plays over LL-HLS too. One encoder feeds both streams
// (ffmpeg's tee): the same frames, and the same load on the machine throughout.
//
// The 0 ms row goes through the proxy as well (it then passes bytes on at once). The pages use
// relative URLs (the master, its playlists, the status poll), so PUBLIC_URL is left alone.
//
// Per player and round trip: p50/p95 of glass-to-glass after BENCH_WARMUP_SECONDS, for
// BENCH_LATENCY_SECONDS; stalls (hls.js's BUFFER_STALLED_ERROR, which both pages count) from the
// page's load on, the start included; waits ("waiting" events after the video first played, the
// browser's own count of running dry); first frame: navigation start → the first frame presented
// while playing (requestVideoFrameCallback's presentationTime). Ratios are against the same
// player's 0 ms row (the DVR row against onair's).

import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import express from "express";
import type { Browser } from "playwright-core";
import { startDelayProxy } from "../test/helpers/delayProxy";
import { startServerProcess, type ServerProcess } from "../test/helpers/serverProcess";
import { hlsJsPage, median, pct, startSource, untilPlayable, watch } from "./glassClock";
import { fixed, formatTable, serverApi } from "./lib";

const DVR_WINDOW_S = 120;

/**
 * Installed before the page's own scripts: when the first frame was presented while playing (ms
 * since the navigation started) and how often the video ran dry once it had played.
 */
const START_METER = `(() => {
  const start = (window.__start = { firstFrame: undefined, waits: 0 });
  document.addEventListener("DOMContentLoaded", () => {
    const video = document.getElementById("video");
    let played = false;
    video.addEventListener("playing", () => { played = true; });
    video.addEventListener("waiting", () => { if (played) start.waits++; });
    // A frame shown paused (before play()) is not playback yet: the next one is asked for.
    const frame = (_now, md) => {
      if (!video.paused) start.firstFrame = md.presentationTime;
      else video.requestVideoFrameCallback(frame);
    };
    video.requestVideoFrameCallback(frame);
  });
})()`;

interface FarRow {
  rttMs: number;
  /** Which 0 ms row the ratios are against. */
  player: "onair" | "hls.js";
  name: string;
  latencies: number[];
  stalls: number;
  waits: number;
  firstFrameMs?: number;
  /** onair's live target at the end (s). */
  target?: number;
}

interface Stream {
  streamKey: string;
  playbackId: string;
}

/** One page, from navigation to the end of the measured window. */
async function farWatch(browser: Browser, url: string, kind: string, warmupS: number, seconds: number): Promise<Omit<FarRow, "rttMs" | "player" | "name">> {
  const page = await browser.newPage({ bypassCSP: true });
  try {
    await page.addInitScript(START_METER);
    await page.goto(url);
    const watched = await watch(page, kind, warmupS, seconds);
    const start = (await page.evaluate("window.__start")) as { firstFrame?: number; waits: number };
    if (kind.startsWith("onair")) {
      // What the player measured and, for any stall, where it was: what tuning it needs.
      const seen = (await page.evaluate("({ rtt: window.onairPlayer.rtt, stallLog: window.onairPlayer.stallLog })")) as { rtt?: number; stallLog: unknown[] };
      console.log(`  ${kind}: round trip measured ${fixed(seen.rtt, 3)} s${seen.stallLog.length ? `, stalls ${JSON.stringify(seen.stallLog)}` : ""}`);
    }
    return { latencies: watched.latencies.map((l) => l[1]), stalls: watched.stallsFromStart, waits: start.waits, firstFrameMs: start.firstFrame, target: watched.target };
  } finally {
    await page.close();
  }
}

/** The bare hls.js page: GET /?src=<master> (the proxy's URL, which differs per round trip). */
async function servePages(): Promise<http.Server> {
  const app = express();
  app.get("/", (req, res) => res.type("html").send(hlsJsPage(String(req.query.src), "/hls.min.js")));
  app.get("/hls.min.js", (_req, res) => res.sendFile(require.resolve("hls.js/dist/hls.min.js")));
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return server;
}

const portOf = (server: http.Server) => (server.address() as { port: number }).port;

/** Both players (and at 0 ms the DVR stream) through proxies of `rttMs`. */
async function farRtt(browser: Browser, ports: { onair: number; pages: number }, rttMs: number, streams: { plain: Stream; dvr?: Stream }, warmupS: number, seconds: number): Promise<FarRow[]> {
  const onairProxy = await startDelayProxy(ports.onair, rttMs);
  const pagesProxy = await startDelayProxy(ports.pages, rttMs);
  try {
    const onair = `http://127.0.0.1:${onairProxy.port}`;
    const rows: FarRow[] = [];
    const run = async (player: FarRow["player"], name: string, url: string) =>
      rows.push({ rttMs, player, name, ...(await farWatch(browser, url, `${player === "onair" ? name : "hls.js"}@${rttMs}ms`, warmupS, seconds)) });
    await run("onair", "onair", `${onair}/play/${streams.plain.playbackId}?protocol=hls`);
    if (rttMs === 0 && streams.dvr) await run("onair", "onair, DVR", `${onair}/play/${streams.dvr.playbackId}?protocol=hls`);
    const master = `${onair}/hls/${streams.plain.playbackId}/index.m3u8`;
    await run("hls.js", "hls.js defaults", `http://127.0.0.1:${pagesProxy.port}/?src=${encodeURIComponent(master)}`);
    return rows;
  } finally {
    await onairProxy.close();
    await pagesProxy.close();
  }
}

function farTable(rows: FarRow[], all: FarRow[]): string {
  const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined ? fixed(a / b, 2) : "-");
  return formatTable(
    ["round trip", "player", "frames", "p50 s", "p95 s", "stalls", "waits", "first frame s", "target at end s", "p50 / 0 ms", "first frame / 0 ms"],
    rows.map((r) => {
      const zero = all.find((z) => z.rttMs === 0 && z.name === (r.player === "onair" ? "onair" : r.name));
      return [
        `${r.rttMs} ms`,
        r.name,
        String(r.latencies.length),
        fixed(median(r.latencies) / 1000, 3),
        fixed(pct(r.latencies, 95) / 1000, 3),
        String(r.stalls),
        String(r.waits),
        fixed(r.firstFrameMs !== undefined ? r.firstFrameMs / 1000 : undefined, 2),
        fixed(r.target, 2),
        ratio(median(r.latencies), zero && median(zero.latencies)),
        ratio(r.firstFrameMs, zero?.firstFrameMs),
      ];
    }),
  );
}

/**
 * The encoder's output: one stream over RTMP, or several through ffmpeg's tee muxer. The tee does
 * not tell the encoder that FLV wants its headers global (out of band), as the FLV muxer alone
 * does: without the flag no sequence header reaches the server and nothing plays.
 */
function pushTo(urls: string[]): string[] {
  return urls.length === 1 ? ["-f", "flv", urls[0]!] : ["-flags", "+global_header", "-f", "tee", urls.map((u) => `[f=flv]${u}`).join("|")];
}

/** The far-viewer run: a table per round trip as it is measured, then all of them together. */
export async function farMain(browser: Browser, rtts: number[], warmupS: number, seconds: number): Promise<void> {
  if (!rtts.length) throw new Error("BENCH_RTT_MS lists no round trip");
  console.log(`far viewers: round trips ${rtts.join(", ")} ms through a delay proxy; stalls counted from the page's load\n`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-latency-far-"));
  let server: ServerProcess | undefined;
  let source: ReturnType<typeof startSource> | undefined;
  let pages: http.Server | undefined;
  try {
    server = await startServerProcess(dataDir, { LOG_LEVEL: "info" });
    const plain = (await serverApi(server, "POST", "/stream", { name: "latency bench (far)" })) as Stream;
    const dvr = rtts.includes(0) ? ((await serverApi(server, "POST", "/stream", { name: "latency bench (DVR)", dvrWindow: DVR_WINDOW_S })) as Stream) : undefined;
    const streams = [plain, ...(dvr ? [dvr] : [])];
    source = startSource(pushTo(streams.map((s) => `${server!.rtmpUrl}/${s.streamKey}`)));
    const base = server.apiUrl.replace(/\/api$/, "");
    for (const s of streams) await untilPlayable(base, s.playbackId, source.startedAt);
    pages = await servePages();
    const ports = { onair: Number(new URL(base).port), pages: portOf(pages) };
    const rows: FarRow[] = [];
    for (const rtt of rtts) {
      const measured = await farRtt(browser, ports, rtt, { plain, dvr }, warmupS, seconds);
      rows.push(...measured);
      console.log(`\n${farTable(measured, rows)}\n`);
    }
    console.log(`all round trips:\n${farTable(rows, rows)}`);
    console.log("targets: onair p50 ≤ 0.8 s and 0 stalls at 80 ms, p50 ≤ 1.1 s and 0 stalls at 150 ms; at 0 ms no worse than 0.61–0.64 s");
    const problems = server.log().split("\n").filter((l) => /"level":(50|60)/.test(l));
    if (problems.length) console.log(`onair logged errors:\n${problems.slice(-5).join("\n")}`);
  } finally {
    pages?.close();
    await source?.stop();
    await server?.kill();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
