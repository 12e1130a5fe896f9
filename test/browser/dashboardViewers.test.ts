import { chromium, type Browser } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, openPage } from "../helpers/browser";
import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { apiClient, startTestServer, type TestServer } from "../helpers/server";

// The dashboard shows each live stream's concurrent viewers (GET /api/data/views/now), in a
// real headless Chromium; the viewers are fed to the node's counter as the HLS routes do.

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
  expect(await rowOf(idle.playbackId).locator(".viewers").textContent()).toBe("");
  expect(await page.locator("#streams thead th").allTextContents()).toEqual(["Name", "Status", "Viewers", "Ingest", "Playback"]);
  expect(problems).toEqual([]);
  await page.close();
}, 60_000);
