import fs from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { apiClient, startTestServer, tempDir, type Api, type TestServer } from "../helpers/server";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, openPage as openBrowserPage } from "../helpers/browser";

// The player page and the dashboard in a real headless Chromium (Debian's, never a downloaded
// one), against a real server with a real RTMP push. Page-side code is passed as strings: the
// project's type check has no DOM library.

if (!haveChromium) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`);
const inChromium = haveChromium ? it : it.skip;

const PROFILES = [
  { name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 },
  { name: "90p", bitrate: 120_000, fps: 15, width: 160, height: 90 },
];
// Escaping is checked where it matters: the browser must show this name as text.
const NAME = `Studio <b>"one"</b> & 'two'`;

let t: TestServer;
let api: Api;
let base: string;
let receiver: Receiver;
let browser: Browser | undefined;
const shots = tempDir("onair-browser-shots-");

beforeAll(async () => {
  t = await startTestServer({ HLS_SEGMENT_SECONDS: "1", HLS_LIST_SIZE: "30" });
  api = apiClient(t.apiUrl, t.key);
  base = `http://127.0.0.1:${t.server.port}`;
  receiver = await startReceiver(() => 204);
  if (haveChromium) {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
    });
  }
});
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await t?.stop();
  console.log(`browser test screenshots: ${shots}`);
});

const openPage = (url: string) => openBrowserPage(browser!, url);

async function screenshot(page: Page, name: string): Promise<void> {
  const file = path.join(shots, `${name}.png`);
  await page.screenshot({ path: file });
  expect(fs.statSync(file).size).toBeGreaterThan(1000);
}

// Functions, not strings: the pages' CSP (no 'unsafe-eval') refuses string predicates.
const videoAt = (page: Page, prop: "currentTime" | "videoHeight", min: number, timeout: number) =>
  page.waitForFunction(([p, m]) => (globalThis as any).document.getElementById("video")[p] >= m, [prop, min] as const, { timeout });
const state = (page: Page) => page.getAttribute("#player", "data-state");
const currentTime = (page: Page) => page.evaluate(() => (globalThis as any).document.getElementById("video").currentTime as number);
const qualityNames = (page: Page) => page.locator("#quality option").allTextContents();

describe("pages over HTTP (no browser needed)", () => {
  it("answers 404 pages, never a 500, for unknown or malformed ids; escapes the stream's name", async () => {
    const s = (await api("POST", "/stream", { name: NAME })).body;
    for (const url of [
      "/play/0123456789abcdef", // well-formed, unknown
      "/play/..%2F..%2Fetc",
      `/play/${"a".repeat(300)}`,
      `/play/${s.playbackId}?session=not-a-session`,
      `/play/${s.playbackId}?session=00000000-0000-0000-0000-000000000000`,
      `/play/${s.playbackId}?session=a&session=b`,
    ]) {
      const res = await fetch(base + url);
      expect([url, res.status, res.headers.get("content-type")]).toEqual([url, 404, "text/html; charset=utf-8"]);
    }
    const page = await fetch(`${base}/play/${s.playbackId}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).not.toContain("<b>");
    expect(html).toContain("Studio &lt;b&gt;&quot;one&quot;&lt;/b&gt; &amp; &#39;two&#39;");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
  });

  it("serves hls.js and the page scripts from this server with their types and short caching", async () => {
    for (const [file, type] of [["hls.min.js", "text/javascript"], ["player.js", "text/javascript"], ["latencyTarget.js", "text/javascript"], ["dashboard.js", "text/javascript"], ["onair.css", "text/css"]]) {
      const res = await fetch(`${base}/assets/${file}`);
      expect([file, res.status, res.headers.get("content-type")]).toEqual([file, 200, `${type}; charset=utf-8`]);
      expect(res.headers.get("cache-control")).toBe("public, max-age=300");
      expect((await res.text()).length).toBeGreaterThan(100);
    }
    expect((await fetch(`${base}/assets/../package.json`)).status).toBe(404);
    const dashboard = await fetch(`${base}/`);
    expect(dashboard.status).toBe(200);
    expect(await dashboard.text()).toContain(`data-rtmp-url="${t.server.rtmpUrl}"`);
  });
});

describe("player and dashboard in headless Chromium", () => {
  let stream: { id: string; playbackId: string; streamKey: string };
  let push: Push;

  inChromium("shows a stream that is not live as offline", async () => {
    const idle = (await api("POST", "/stream", { name: "never live" })).body;
    const { page, problems } = await openPage(`${base}/play/${idle.playbackId}`);
    await page.waitForSelector("#offline", { state: "visible" });
    expect(await page.locator("#offline").textContent()).toContain("This stream is offline");
    expect(await page.locator("#live-badge").isVisible()).toBe(false);
    expect(await page.evaluate(() => (globalThis as any).document.getElementById("video").getAttribute("src") as string | null)).toBeNull();
    await screenshot(page, "player-offline");
    expect(problems).toEqual([]);
    await page.close();
  });

  inChromium("turns from offline into live playback by itself; plays with a quality menu and a LIVE badge", async () => {
    stream = (await api("POST", "/stream", { name: NAME, record: true, profiles: PROFILES })).body;
    expect((await api("POST", "/webhook", { name: "browser test", url: receiver.url })).status).toBe(200);
    // LL-HLS, whose quality menu lists the ladder (WebRTC picks the rendition for the viewer).
    const { page, problems } = await openPage(`${base}/play/${stream.playbackId}?protocol=hls`);
    await page.waitForSelector("#offline", { state: "visible" });

    // Long enough for a busy machine's start-up, the quality switch and its playback.
    push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${stream.streamKey}`, { seconds: 30 });
    // No reload: the page polls and starts playing on its own.
    await videoAt(page, "currentTime", 1, 30_000);
    const first = await currentTime(page);
    await videoAt(page, "currentTime", first + 1, 10_000);
    expect(await state(page)).toBe("live");
    expect(await page.locator("#live-badge").isVisible()).toBe(true);
    expect(await page.locator("#offline").isVisible()).toBe(false);
    expect(await page.locator("h1").textContent()).toBe(NAME);
    expect(await qualityNames(page)).toEqual(["Auto", "180p", "90p"]);

    // Picking a rendition switches to it.
    await page.selectOption("#quality", { label: "90p" });
    await page.waitForFunction(() => (globalThis as any).document.getElementById("video").videoHeight === 90, undefined, { timeout: 15_000 });
    const before = await currentTime(page);
    await videoAt(page, "currentTime", before + 0.5, 10_000);
    await screenshot(page, "player-live");

    // The publisher stops: the page goes back to offline by itself.
    expect((await push.exited).code).toBe(0);
    await page.waitForSelector("#offline", { state: "visible", timeout: 30_000 });
    expect(await page.locator("#live-badge").isVisible()).toBe(false);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  inChromium("plays the recording of that session as VOD, with the quality menu and no LIVE badge", async () => {
    const session = await waitFor("the recording to be ready", async () => {
      const [s] = (await api("GET", `/stream/${stream.id}/sessions`)).body as { id: string; recordingStatus?: string }[];
      return s?.recordingStatus === "ready" ? s : undefined;
    }, 30_000, 250);
    const { page, problems } = await openPage(`${base}/play/${stream.playbackId}?session=${session.id}`);
    await videoAt(page, "currentTime", 1.5, 20_000);
    expect(await state(page)).toBe("vod");
    expect(await page.locator("#live-badge").isVisible()).toBe(false);
    expect(await qualityNames(page)).toEqual(["Auto", "180p", "90p"]);
    await screenshot(page, "player-recording");
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  inChromium("dashboard: key kept in the browser, streams, stream key on click, recordings, webhook log", async () => {
    await receiver.waitFor((r) => r.length > 0, "a webhook delivery");
    const { page, problems } = await openPage(`${base}/`);
    expect(await page.locator("#content").isVisible()).toBe(false);
    await page.fill("#key", "not-a-key");
    await page.click("#key-form button[type=submit]");
    await page.waitForSelector("#message", { state: "visible" });
    expect(await page.locator("#message").textContent()).toContain("refused");

    await page.fill("#key", t.key);
    await page.click("#key-form button[type=submit]");
    const row = page.locator("#streams tbody tr").filter({ has: page.locator(`a[href="/play/${stream.playbackId}"]`) });
    await row.waitFor();
    expect(await row.textContent()).not.toContain(stream.streamKey);
    await row.locator("button.reveal").click();
    await page.locator("#streams code", { hasText: `${t.server.rtmpUrl}/${stream.streamKey}` }).waitFor();

    const play = page.locator(`#sessions a[href*="?session="]`).first();
    await play.waitFor();
    expect(await play.getAttribute("href")).toMatch(new RegExp(`^/play/${stream.playbackId}\\?session=[0-9a-f-]{36}$`));
    // The API's signed URL, on the page's origin.
    const mp4 = await page.locator(`#sessions a[href*="/output.mp4?sig="]`).first().getAttribute("href");
    expect((await fetch(base + mp4!)).headers.get("content-type")).toBe("video/mp4");
    await page.locator("#webhooks td", { hasText: "stream.started" }).first().waitFor();
    await screenshot(page, "dashboard");

    // The key lives in this browser (localStorage): a reload keeps it.
    expect(await page.evaluate(() => (globalThis as any).localStorage.getItem("onair.apiKey") as string | null)).toBe(t.key);
    await page.reload();
    await row.waitFor();
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  inChromium("a live stream plays in hls.js's low-latency mode for 60 s, loading parts, at most one stall", async () => {
    const live = (await api("POST", "/stream", { name: "low latency", profiles: [PROFILES[0]] })).body;
    const publisher = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${live.streamKey}`, { seconds: 80 });
    try {
      const { page, problems } = await openPage(`${base}/play/${live.playbackId}?protocol=hls`);
      await videoAt(page, "currentTime", 1, 30_000);
      const player = () =>
        page.evaluate(() => {
          const p = (globalThis as any).onairPlayer;
          const hls = p.hls;
          const details = hls.levels[hls.currentLevel]?.details;
          return {
            stalls: p.stalls as number,
            stallLog: p.stallLog as unknown[],
            target: p.targetLatency as number,
            lowLatencyMode: hls.config.lowLatencyMode as boolean,
            partTarget: details?.partTarget as number | undefined,
            parts: (details?.partList?.length ?? 0) as number,
            time: (globalThis as any).document.getElementById("video").currentTime as number,
          };
        });
      const start = await player();
      // A minute of playback, looked at every 5 s: parts listed each time. On the loaded 2-core CI
      // machine a part once came late enough for one stall at 0.95 s behind the edge (it never did
      // on an idle one): the player is built to answer a stall by moving its target back (public/latencyTarget.js), so one stall is allowed and a second is not. How
      // often it stalls is the latency bench's to say.
      for (let i = 0; i < 12; i++) {
        await new Promise((r) => setTimeout(r, 5000));
        const now = await player();
        if (now.stalls > 0) console.log(JSON.stringify(now));
        expect(now).toMatchObject({ lowLatencyMode: true, partTarget: 0.2 });
        expect(now.stalls).toBeLessThanOrEqual(1);
        expect(now.parts).toBeGreaterThan(0);
      }
      const end = await player();
      // Real time, give or take the catch-up's 12 %.
      expect(end.time - start.time).toBeGreaterThan(55);
      expect(end.time - start.time).toBeLessThan(60 * 1.13);
      expect(await state(page)).toBe("live");
      expect(problems).toEqual([]);
      await page.close();
    } finally {
      publisher.child.kill("SIGKILL");
      await publisher.exited;
    }
  }, 150_000);

  inChromium("plays over WebRTC first and says so; falls back to LL-HLS when the WHEP endpoint fails", async () => {
    const live = (await api("POST", "/stream", { name: "real time", profiles: PROFILES })).body;
    const publisher = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${live.streamKey}`, { seconds: 60 });
    try {
      const { page, problems } = await openPage(`${base}/play/${live.playbackId}`);
      await videoAt(page, "currentTime", 0.5, 30_000);
      expect(await page.getAttribute("#player", "data-protocol")).toBe("webrtc");
      expect(await page.locator("#protocol").textContent()).toBe("WebRTC");
      expect(await page.evaluate(() => (globalThis as any).document.getElementById("video").videoHeight as number)).toBeGreaterThan(0);
      // Real time passes on the video, with no stall on loopback.
      const before = await currentTime(page);
      await videoAt(page, "currentTime", before + 3, 10_000);
      expect(await page.evaluate(() => (globalThis as any).onairPlayer.stalls as number)).toBe(0);
      // Chrome reports its bandwidth estimate (REMB), which the server's rendition choice reads.
      const resource = await page.evaluate(() => (globalThis as any).onairPlayer.webrtcResource as string);
      const viewer = await waitFor("the browser's estimate", async () => {
        const v = (await (await fetch(resource)).json()) as { estimatedBitrate: number | null; rendition: { name: string } | null; framesSent: number };
        return v.estimatedBitrate ? v : undefined;
      }, 10_000, 250);
      expect(viewer.framesSent).toBeGreaterThan(60);
      expect(PROFILES.map((p) => p.name)).toContain(viewer.rendition!.name);
      expect(problems).toEqual([]);
      await page.close();

      // The WHEP endpoint answers 500: the page plays LL-HLS instead, and says so.
      const fallback = await browser!.newPage();
      await fallback.route("**/whep/**", (route) => route.fulfill({ status: 500, contentType: "application/json", body: JSON.stringify({ errors: ["made to fail"] }) }));
      await fallback.goto(`${base}/play/${live.playbackId}`);
      await videoAt(fallback, "currentTime", 1, 30_000);
      expect(await fallback.getAttribute("#player", "data-protocol")).toBe("hls");
      expect(await fallback.locator("#protocol").textContent()).toBe("LL-HLS");
      expect(await fallback.evaluate(() => (globalThis as any).onairPlayer.webrtcError as string)).toMatch(/WHEP answered 500/);
      await fallback.close();
    } finally {
      publisher.child.kill("SIGKILL");
      await publisher.exited;
    }
  }, 120_000);
});
