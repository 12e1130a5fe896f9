// What the glass-to-glass benches share (bench/latency.ts, bench/latencyFar.ts): the wall clock
// drawn into every pushed frame, the source that pushes it, the meter that reads it back off the
// frames headless Chromium presents, and the watch that collects its readings.

import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import { chromium, type Browser, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
export const FFMPEG = process.env.FFMPEG_PATH || "ffmpeg";
export const WIDTH = 640;
export const HEIGHT = 360;
export const FPS = 30;
/** The code: 24 bits of the wall clock (ms, so it wraps every 4.6 h), Gray-coded, one block per bit. */
export const BITS = 24;
export const BLOCK = 24;
export const BAND_X = 16;
export const BAND_Y = 8;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Writes `ms` as Gray-coded blocks into a Y plane (pure). */
export function drawClock(y: Buffer, ms: number): void {
  const value = ms % 2 ** BITS;
  const gray = value ^ (value >> 1);
  for (let bit = 0; bit < BITS; bit++) {
    const on = (gray >> (BITS - 1 - bit)) & 1;
    const luma = on ? 235 : 16;
    const x0 = BAND_X + bit * BLOCK;
    for (let row = BAND_Y; row < BAND_Y + BLOCK; row++) y.fill(luma, row * WIDTH + x0, row * WIDTH + x0 + BLOCK);
  }
}

/**
 * Raw frames at FPS, each stamped with the wall clock when it is handed to the encoder, into an
 * ffmpeg that encodes as a broadcaster's low-latency encoder would and writes `output`.
 */
export function startSource(output: string[]): { child: ChildProcess; startedAt: number; stop(): Promise<void> } {
  const child = spawn(FFMPEG, [
    "-hide_banner", "-loglevel", "error", "-nostdin",
    "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", `${WIDTH}x${HEIGHT}`, "-r", String(FPS), "-i", "pipe:0",
    // The audio on the video's clock, as an encoder stamps both: no -re, so ffmpeg makes the tone
    // as the frames need it (it reads the input of the output stream furthest behind). With -re
    // the tone's clock started with ffmpeg, after the frames': the audio was always the stream
    // behind and not yet readable, so each frame waited in the pipe for it (about 0.3 s here).
    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-map", "0:v", "-map", "1:a",
    "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", String(FPS), "-pix_fmt", "yuv420p", "-b:v", "1500k",
    "-c:a", "aac", "-b:a", "96k",
    ...output,
  ], { stdio: ["pipe", "ignore", "inherit"] });
  const frame = Buffer.alloc(WIDTH * HEIGHT * 1.5, 128);
  const yPlane = frame.subarray(0, WIDTH * HEIGHT);
  const startedAt = Date.now();
  let n = 0;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    const due = startedAt + (n * 1000) / FPS;
    if (Date.now() >= due) {
      drawClock(yPlane, Date.now());
      child.stdin!.write(frame);
      n++;
    }
    setTimeout(tick, Math.max(0, startedAt + (n * 1000) / FPS - Date.now()));
  };
  child.stdin!.on("error", () => undefined);
  tick();
  return {
    child,
    startedAt,
    stop: async () => {
      stopped = true;
      child.stdin!.end();
      // The tone has no end of its own: past the frames' end ffmpeg would encode it flat out.
      // (-shortest would too, but newer ffmpeg buffers every output for it: latency.)
      child.kill("SIGINT");
      const exited = new Promise<void>((r) => child.once("close", () => r()));
      setTimeout(() => child.kill("SIGKILL"), 3000).unref();
      await exited;
    },
  };
}

/**
 * Installed in the page: reads the code off every presented frame, keeps the latencies. Plain
 * JavaScript in a string: the TypeScript runner's helpers do not exist in the page.
 */
export const INSTALL_METER = `(() => {
  const video = document.getElementById("video");
  const canvas = document.createElement("canvas");
  canvas.width = 640;
  canvas.height = 48;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const meter = (window.__meter = { samples: [], recent: [], unreadable: 0 });
  const step = (now, md) => {
    if (video.videoWidth > 0) {
      // The top 48 of ${HEIGHT} source lines, at whatever size this rendition has.
      ctx.drawImage(video, 0, 0, video.videoWidth, (video.videoHeight * 48) / ${HEIGHT}, 0, 0, 640, 48);
      const px = ctx.getImageData(0, 0, 640, 48).data;
      let gray = 0;
      for (let bit = 0; bit < ${BITS}; bit++) {
        const x = ${BAND_X} + bit * ${BLOCK} + ${BLOCK / 2};
        gray = gray * 2 + (px[(${BAND_Y + BLOCK / 2} * 640 + x) * 4] > 128 ? 1 : 0);
      }
      let value = gray;
      for (let s = 1; s < ${BITS}; s *= 2) value ^= value >> s;
      const shown = Math.floor(performance.timeOrigin + md.expectedDisplayTime) % ${2 ** BITS};
      const latency = (shown - value + ${2 ** BITS}) % ${2 ** BITS};
      if (latency < 30000) {
        meter.samples.push([Date.now(), latency]);
        meter.recent.push(latency);
        if (meter.recent.length > ${FPS * 2}) meter.recent.shift();
      } else meter.unreadable++;
    }
    video.requestVideoFrameCallback(step);
  };
  video.requestVideoFrameCallback(step);
})()`;

/** The latencies of the last 2 s of frames. */
export const RECENT = "window.__meter.recent.slice()";

export interface Reading {
  samples: [number, number][];
  stalls: number;
  /** The player's live target at the end (s), where the player says. */
  target?: number;
}

export async function drain(page: Page, kind: string): Promise<Reading> {
  const onair = kind.startsWith("onair");
  const stalls = onair ? "window.onairPlayer.stalls" : "window.baselineStalls";
  const target = onair ? "window.onairPlayer.targetLatency" : "undefined";
  return page.evaluate(`({ samples: window.__meter.samples.splice(0), stalls: ${stalls}, target: ${target} })`) as Promise<Reading>;
}


export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN;
};
export const median = (xs: number[]) => pct(xs, 50);

export interface Watched {
  /** [ms, latency ms] of each frame shown while measured. */
  latencies: [number, number][];
  /** Stalls while measured (after the warm-up). */
  stalls: number;
  /** Stalls since the page loaded: the start included. */
  stallsFromStart: number;
  target?: number;
}

/**
 * Watches for `seconds` after a warm-up; `midway` runs at 40 % of the window, and the frames
 * shown while it runs (a disturbance and the recovery from it) are left out of the figures.
 */
export async function watch(page: Page, kind: string, warmupS: number, seconds: number, midway?: () => Promise<void>): Promise<Watched> {
  await page.waitForFunction(`document.getElementById("video").currentTime > 0.5`, undefined, { timeout: 60_000 });
  await page.evaluate(INSTALL_METER);
  await sleep(warmupS * 1000);
  const before = await drain(page, kind);
  const latencies: [number, number][] = [];
  const end = Date.now() + seconds * 1000;
  let injected = false;
  while (Date.now() < end) {
    await sleep(2000);
    latencies.push(...(await drain(page, kind)).samples);
    if (midway && !injected && Date.now() > end - seconds * 600) {
      injected = true;
      const from = Date.now();
      await midway();
      const to = Date.now();
      const kept = (await drain(page, kind)).samples.filter(([at]) => at < from || at > to);
      latencies.push(...kept);
    }
    process.stdout.write(`\r  ${kind}: ${Math.round((end - Date.now()) / 1000)} s left, ${latencies.length} frames, p50 ${median(latencies.map((l) => l[1]))} ms   `);
  }
  process.stdout.write("\n");
  const after = await drain(page, kind);
  return { latencies, stalls: after.stalls - before.stalls, stallsFromStart: after.stalls, target: after.target };
}

/** The stream's master playlist answers 200: HLS is playable (ms after the encoder started). */
export async function untilPlayable(base: string, playbackId: string, startedAt: number): Promise<number> {
  for (;;) {
    if ((await fetch(`${base}/hls/${playbackId}/index.m3u8`)).status === 200) return Date.now() - startedAt;
    if (Date.now() - startedAt > 30_000) throw new Error("onair did not become playable in 30 s");
    await sleep(10);
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = http.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.once("error", reject);
  });
}

/**
 * A bare page playing `src` with hls.js's defaults, counting its stalls in window.baselineStalls
 * (what drain reads of a setup not named onair). `hlsJs`: the path the page loads hls.js from (the bench's own).
 */
export function hlsJsPage(src: string, hlsJs: string): string {
  // JSON in a script: a "</script>" in the URL must not end it.
  const json = (s: string) => JSON.stringify(s).replace(/</g, "\\u003c");
  return `<!doctype html><video id="video" muted playsinline></video><script src="${hlsJs}"></script><script>
      window.baselineStalls = 0;
      var hls = new Hls();
      hls.on(Hls.Events.ERROR, function (_e, d) { if (d.details === Hls.ErrorDetails.BUFFER_STALLED_ERROR) window.baselineStalls++; });
      hls.loadSource(${json(src)}); hls.attachMedia(document.getElementById("video"));
      hls.on(Hls.Events.MANIFEST_PARSED, function () { document.getElementById("video").play(); });
    </script>`;
}

/** Debian's Chromium, headless, playing without a gesture and never throttled in the background. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required", "--disable-background-timer-throttling", "--disable-renderer-backgrounding"],
  });
}
