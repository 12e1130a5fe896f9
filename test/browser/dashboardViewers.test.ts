import { chromium, type Browser, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, openPage } from "../helpers/browser";
import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { apiClient, startTestServer, type TestServer } from "../helpers/server";

// The dashboard shows each live stream's concurrent viewers (GET /api/data/views/now), in a
// real headless Chromium: viewers fed to the node's counter as the HLS routes do, then real
// player pages, one on WebRTC and one on LL-HLS, counted per protocol.

if (!haveChromium) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`);
const inChromium = haveChromium ? it : it.skip;

let t: TestServer;
let browser: Browser | undefined;
let push: Push | undefined;

beforeAll(async () => {
  t = await startTestServer({ NODE_HEARTBEAT_SECONDS: "1" });
  if (haveChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  push?.child.kill("SIGKILL");
  await browser?.close();
  await t?.stop();
});

inChromium("the dashboard shows a live stream's viewers, and none for an idle one", async () => {
  const api = apiClient(t.apiUrl, t.key);
  const live = (await api("POST", "/stream", { name: "live one", profiles: [] })).body;
  const idle = (await api("POST", "/stream", { name: "idle one", profiles: [] })).body;
  push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${live.streamKey}`, { seconds: 30 });
  await waitFor("isActive", async () => (await api("GET", `/stream/${live.id}`)).body.isActive);
  for (const viewer of ["v1", "v2"]) t.server.viewers.seen(live.playbackId, viewer);

  const { page, problems } = await openPage(browser!, `http://127.0.0.1:${t.server.port}/`);
  await page.fill("#key", t.key);
  await page.click("#key-form button[type=submit]");
  const rowOf = (playbackId: string) => page.locator("#streams tbody tr").filter({ has: page.locator(`a[href="/play/${playbackId}"]`) });
  // The dashboard polls every 4 s; the node writes its counts every heartbeat (1 s here).
  await rowOf(live.playbackId).locator(".viewers", { hasText: "2 viewers" }).waitFor({ timeout: 15_000 });
  // Viewer ids not under the WebRTC prefix are HLS player sessions.
  expect(await rowOf(live.playbackId).locator(".viewers").textContent()).toBe("2 viewers · 2 HLS");
  expect(await rowOf(idle.playbackId).locator(".viewers").textContent()).toBe("");
  expect(await page.locator("#streams thead th").allTextContents()).toEqual(["Name", "Status", "Viewers", "Ingest", "Playback"]);
  expect(problems).toEqual([]);
  await page.close();
}, 60_000);

// Functions, not strings: the pages' CSP (no 'unsafe-eval') refuses string predicates.
const playing = (page: Page) => page.waitForFunction(() => (globalThis as any).document.getElementById("video").currentTime >= 0.5, undefined, { timeout: 30_000 });

inChromium("a WebRTC player and an LL-HLS player of one stream show as 1 WebRTC and 1 HLS viewer", async () => {
  const api = apiClient(t.apiUrl, t.key);
  const live = (await api("POST", "/stream", { name: "two ways", profiles: [] })).body;
  const publisher = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${live.streamKey}`, { seconds: 60 });
  try {
    await waitFor("isActive", async () => (await api("GET", `/stream/${live.id}`)).body.isActive);
    const base = `http://127.0.0.1:${t.server.port}`;
    // The player page plays WebRTC first when the stream is live; ?protocol=hls keeps it on HLS.
    const webrtc = await openPage(browser!, `${base}/play/${live.playbackId}`);
    const hls = await openPage(browser!, `${base}/play/${live.playbackId}?protocol=hls`);
    await Promise.all([playing(webrtc.page), playing(hls.page)]);
    // Why WebRTC did not start, should it not have: the player keeps its error.
    const protocol = await webrtc.page.getAttribute("#player", "data-protocol");
    const why = await webrtc.page.evaluate(() => (globalThis as any).onairPlayer.webrtcError);
    expect({ protocol, why }).toEqual({ protocol: "webrtc", why: undefined });
    expect(await hls.page.getAttribute("#player", "data-protocol")).toBe("hls");

    const { page, problems } = await openPage(browser!, `${base}/`);
    await page.fill("#key", t.key);
    await page.click("#key-form button[type=submit]");
    const viewers = page.locator("#streams tbody tr").filter({ has: page.locator(`a[href="/play/${live.playbackId}"]`) }).locator(".viewers");
    await viewers.filter({ hasText: "2 viewers · 1 WebRTC, 1 HLS" }).waitFor({ timeout: 15_000 });
    expect(await viewers.textContent()).toBe("2 viewers · 1 WebRTC, 1 HLS");
    expect([...problems, ...webrtc.problems, ...hls.problems]).toEqual([]);
    for (const p of [page, webrtc.page, hls.page]) await p.close();
  } finally {
    publisher.child.kill("SIGKILL");
    await publisher.exited;
  }
}, 90_000);
