import { chromium, type Browser } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, openPage as openBrowserPage } from "../helpers/browser";
import { waitFor } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// "Go live" from a browser: the /broadcast page in a real headless Chromium with its fake
// camera and microphone publishes over WHIP; the stream then plays on the player page. ICE
// stays on loopback: the server binds 127.0.0.1, and Chromium shows no mDNS names.

if (!haveChromium) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`);
const inChromium = haveChromium ? it : it.skip;

const fx = useTestServer({ WEBRTC_BIND_ADDRESS: "127.0.0.1", HLS_SEGMENT_SECONDS: "1" });
const { api } = fx;
let browser: Browser | undefined;

beforeAll(async () => {
  if (!haveChromium) return;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      ...CHROMIUM_ARGS,
      "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
      "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
    ],
  });
});
afterAll(() => browser?.close());

const openPage = (url: string) => openBrowserPage(browser!, url, { width: 1100, height: 750 });

describe("the broadcast page", () => {
  it("answers without a browser, escaping what it shows", async () => {
    const res = await fetch(`http://127.0.0.1:${fx.t.server.port}/broadcast?stream=<script>`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('data-stream-id=""');
    expect(html).not.toContain("<script>");
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
  });

  inChromium("goes live from the fake camera over WHIP, plays on the player page, and stops", async () => {
    const s = (await api("POST", "/stream", { name: "from the browser", profiles: [{ name: "360p", width: 640, height: 360, fps: 30, bitrate: 800_000 }] })).body;
    const base = `http://127.0.0.1:${fx.t.server.port}`;
    const { page, problems } = await openPage(`${base}/broadcast?stream=${s.id}`);
    await page.waitForFunction(() => ((globalThis as any).document.getElementById("preview").videoWidth as number) > 0, undefined, { timeout: 15_000 });
    await page.fill("#stream-key", s.streamKey);
    await page.selectOption("#resolution", "640x360");
    await page.selectOption("#bitrate", "1200");
    await page.click("#go-live");
    await page.waitForSelector("#broadcast[data-state=live]", { timeout: 30_000 }).catch(async (err: Error) => {
      throw new Error(`${err.message}\npage status: ${await page.textContent("#status")}; message: ${await page.textContent("#message")}`);
    });
    expect(await page.textContent("#status")).toMatch(/^Live/);
    expect(await page.isVisible("#live-badge")).toBe(true);
    expect((await api("GET", `/stream/${s.id}`)).body.isActive).toBe(true);
    const [session] = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(session).toMatchObject({ protocol: "webrtc", isActive: true });
    expect(await page.getAttribute("#watch-link", "href")).toBe(`/play/${s.playbackId}`);

    // A viewer watches it on the player page.
    const viewer = await openPage(`${base}/play/${s.playbackId}`);
    await viewer.page.waitForFunction(() => ((globalThis as any).document.getElementById("video").currentTime as number) >= 2, undefined, { timeout: 30_000 });
    expect(await viewer.page.getAttribute("#player", "data-state")).toBe("live");

    await page.click("#stop");
    expect(await page.getAttribute("#broadcast", "data-state")).toBe("idle");
    await waitFor("the stream idle", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive, 15_000);
    expect([...problems, ...viewer.problems]).toEqual([]);
  });
});
