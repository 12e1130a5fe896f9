import { chromium, type Browser, type Page } from "playwright-core";
import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, openPage } from "../helpers/browser";
import { useTestServer } from "../helpers/server";

// The player page over a live DVR stream in a real headless Chromium: its seek bar goes back
// into the window (the player then plays there, at normal speed, not catching up), and "Go live"
// brings it back to the live edge. Page-side code is passed as functions (the pages' CSP).

const inChromium = haveChromium ? it : it.skip;
const fx = useTestServer({ HLS_SEGMENT_SECONDS: "1" });
const PUSH_SECONDS = 90;
let browser: Browser | undefined;
let push: Push | undefined;

beforeAll(async () => {
  if (haveChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  push?.child.kill("SIGKILL");
  await push?.exited;
});

type Dvr = { start: number; edge: number; behind: number; byChoice: boolean };
const dvrState = (page: Page) => page.evaluate(() => (globalThis as any).onairPlayer.dvr as Dvr | undefined);
const currentTime = (page: Page) => page.evaluate(() => (globalThis as any).document.getElementById("video").currentTime as number);

describe("the player page's DVR controls", () => {
  inChromium("seeks back with the seek bar, plays there, and comes back with Go live", async () => {
    const s = (await fx.api("POST", "/stream", { name: "dvr in the browser", dvrWindow: 300 })).body;
    push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: PUSH_SECONDS });
    await waitFor("50 s of media", async () => (await fx.api("GET", `/stream/${s.id}`)).body.sourceSegmentsDuration >= 50, 80_000, 500);

    const { page, problems } = await openPage(browser!, `http://127.0.0.1:${fx.t.server.port}/play/${s.playbackId}`);
    expect(await page.getAttribute("#player", "data-dvr")).toBe("300");
    await page.waitForSelector("#dvr", { state: "visible", timeout: 30_000 });
    // It plays at the live edge first, over LL-HLS (WebRTC has nothing to seek back into).
    await page.waitForFunction(() => (globalThis as any).onairPlayer.dvr?.behind < 3 && (globalThis as any).document.getElementById("video").currentTime > 0, undefined, { timeout: 30_000 });
    expect(await page.getAttribute("#player", "data-protocol")).toBe("hls");
    const atEdge = (await dvrState(page))!;
    expect(atEdge.edge - atEdge.start).toBeGreaterThan(45);
    expect(await page.locator("#behind").textContent()).toBe("live");
    expect(await page.locator("#go-live").isDisabled()).toBe(true);

    // The seek bar's preview: the storyboard's tile of the point under the pointer, a later
    // tile further right, and its sprite served to the page.
    type Preview = { at: number; url: string; x: number; y: number; w: number; h: number };
    const bar = (await page.locator("#seek").boundingBox())!;
    const hover = async (fraction: number) => {
      await page.mouse.move(bar.x + bar.width * fraction, bar.y + bar.height / 2);
      return page.evaluate(() => (globalThis as any).onairPlayer.preview as Preview | undefined);
    };
    const early = await waitFor("a preview over the seek bar", () => hover(0.05), 20_000, 250);
    expect(await page.locator("#seek-preview").isVisible()).toBe(true);
    expect(early.w).toBe(160);
    const late = (await hover(0.95))!;
    expect(late.at).toBeGreaterThan(early.at + 15);
    expect([late.url, late.x, late.y]).not.toEqual([early.url, early.x, early.y]);
    const sprite = await page.evaluate(async (url) => {
      const res = await fetch(url);
      return { status: res.status, type: res.headers.get("content-type") };
    }, late.url);
    expect(sprite).toEqual({ status: 200, type: "image/jpeg" });
    await page.mouse.move(0, 0);

    // The seek bar to its start, more than 45 s back: the window's oldest media, from the server's disk.
    await page.$eval("#seek", (el: any) => {
      el.value = "0";
      el.dispatchEvent(new Event("input"));
      el.dispatchEvent(new Event("change"));
    });
    await page.waitForFunction(() => (globalThis as any).onairPlayer.dvr?.behind > 45, undefined, { timeout: 10_000 });
    // It plays there (the playhead moves), at normal speed, and stays behind by the viewer's choice.
    const from = await currentTime(page);
    await page.waitForFunction((t) => (globalThis as any).document.getElementById("video").currentTime > t + 2, from, { timeout: 20_000 });
    const back = (await dvrState(page))!;
    expect(back.byChoice).toBe(true);
    expect(back.behind).toBeGreaterThan(40);
    expect(await page.evaluate(() => (globalThis as any).document.getElementById("video").playbackRate as number)).toBe(1);
    expect(await page.locator("#behind").textContent()).toMatch(/^-\d/);
    expect(await page.locator("#go-live").isDisabled()).toBe(false);

    // Go live: back at the edge.
    await page.click("#go-live");
    await page.waitForFunction(() => (globalThis as any).onairPlayer.dvr?.behind < 3, undefined, { timeout: 15_000 });
    expect((await dvrState(page))!.byChoice).toBe(false);
    // And the keyboard: a step back (ArrowLeft) leaves the live edge; L returns to it.
    // Keys on the page (the video's own controls keep theirs when it has the focus).
    await page.evaluate(() => (globalThis as any).document.activeElement?.blur());
    for (let i = 0; i < 3; i++) await page.keyboard.press("ArrowLeft");
    await page.waitForFunction(() => (globalThis as any).onairPlayer.dvr?.behind > 8, undefined, { timeout: 10_000 });
    await page.keyboard.press("l");
    await page.waitForFunction(() => (globalThis as any).onairPlayer.dvr?.behind < 3, undefined, { timeout: 15_000 });
    expect(problems).toEqual([]);
    await page.close();
  }, 150_000);

  inChromium("shows no seek bar for a stream without DVR", async () => {
    const s = (await fx.api("POST", "/stream", { name: "no dvr in the browser" })).body;
    const { page } = await openPage(browser!, `http://127.0.0.1:${fx.t.server.port}/play/${s.playbackId}`);
    expect(await page.getAttribute("#player", "data-dvr")).toBe("0");
    expect(await page.locator("#dvr").isVisible()).toBe(false);
    await page.close();
  });
});
