import { chromium, type Browser } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, openPage } from "../helpers/browser";
import { startDelayProxy, type DelayProxy } from "../helpers/delayProxy";
import { pushTestStream, type Push } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// A viewer far away: the player page and everything it asks for (status polls, playlists, parts)
// pass through a proxy holding every byte 40 ms each way, the TCP handshake included, over a real
// RTMP push. The player must start and play a minute without a stall, its start included. How
// close to live it gets is the latency bench's to say (BENCH_RTT_MS=0,80,150): asserted here only
// loosely. Page-side code is passed as functions (the pages' CSP).

const inChromium = haveChromium ? it : it.skip;
const fx = useTestServer({ HLS_SEGMENT_SECONDS: "1" });
const ROUND_TRIP_MS = 80;
const WATCH_MS = 60_000;
let browser: Browser | undefined;
let proxy: DelayProxy | undefined;
let push: Push | undefined;

beforeAll(async () => {
  if (haveChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  await proxy?.close();
  push?.child.kill("SIGKILL");
  await push?.exited;
});

interface Seen {
  stalls: number;
  stallLog: unknown[];
  time: number;
  paused: boolean;
  latency: number | null;
  target: number;
  rtt: number;
  protocol: string;
}

describe("a viewer 80 ms away", () => {
  inChromium("plays LL-HLS for a minute without a stall, its start included", async () => {
    const s = (await fx.api("POST", "/stream", { name: "far viewer" })).body;
    push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 120 });
    proxy = await startDelayProxy(fx.t.server.port, ROUND_TRIP_MS);
    const { page, problems } = await openPage(browser!, `http://127.0.0.1:${proxy.port}/play/${s.playbackId}?protocol=hls`);
    const seen = () =>
      page.evaluate((): Seen => {
        const p = (globalThis as any).onairPlayer;
        const video = (globalThis as any).document.getElementById("video");
        return { stalls: p.stalls, stallLog: p.stallLog, time: video.currentTime, paused: video.paused, latency: p.hls?.latency ?? null, target: p.targetLatency, rtt: p.rtt, protocol: p.protocol };
      });
    // The page polls until the stream is live, then starts by itself.
    await page.waitForFunction(() => {
      const video = (globalThis as any).document.getElementById("video");
      return video.currentTime > 0 && !video.paused;
    }, undefined, { timeout: 30_000 });
    const start = await seen();
    // A minute of playback from the start; a stall ends the wait at once.
    const until = Date.now() + WATCH_MS;
    await page.waitForFunction((deadline) => (globalThis as any).onairPlayer.stalls > 0 || Date.now() > deadline, until, { timeout: WATCH_MS + 10_000, polling: 250 });
    const end = await seen();
    if (end.stalls > 0) console.log(JSON.stringify(end));
    expect({ stalls: end.stalls, stallLog: end.stallLog }).toEqual({ stalls: 0, stallLog: [] });
    expect(end).toMatchObject({ protocol: "hls", paused: false });
    // It played the minute (faster while catching up at the start, never slower than real time
    // for long), and stayed live: loosely, the bench measures how close.
    expect(end.time - start.time).toBeGreaterThan(55);
    expect(end.latency).toBeGreaterThan(0);
    expect(end.latency).toBeLessThan(3);
    // It measured the distance the proxy puts between it and the server.
    expect(end.rtt).toBeGreaterThanOrEqual(ROUND_TRIP_MS / 1000);
    expect(await page.getAttribute("#player", "data-state")).toBe("live");
    expect(problems).toEqual([]);
    await page.close();
  }, 150_000);
});
