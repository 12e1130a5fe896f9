import { chromium, type Browser, type Page } from "playwright-core";
import { Livepeer } from "livepeer";
import { Events } from "livepeer/models/components";
import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { apiClient, startTestServer, type TestServer } from "../helpers/server";
import { signJwt } from "../helpers/jwt";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { CHROMIUM, CHROMIUM_ARGS, openPage } from "../helpers/browser";

// Playback access control end to end: signing keys made through the official SDK, JWTs signed
// as a Livepeer app signs them (the private key as the API returned it), a live stream behind a
// `jwt` policy and one behind a `webhook` policy answered by a real receiver, hls.js in
// headless Chromium through the player page, and viewers counted from real players.

const TOKEN_SECONDS = 5;
const VIEWER_WINDOW_SECONDS = 4;

let t: TestServer;
let sdk: Livepeer;
let base: string;
let receiver: Receiver;
let browser: Browser;
const pushes: Push[] = [];

beforeAll(async () => {
  t = await startTestServer({
    HLS_SEGMENT_SECONDS: "1",
    PLAYBACK_TOKEN_SECONDS: String(TOKEN_SECONDS),
    VIEWER_WINDOW_SECONDS: String(VIEWER_WINDOW_SECONDS),
    NODE_HEARTBEAT_SECONDS: "1",
    NODE_LEASE_SECONDS: "3",
  });
  sdk = new Livepeer({ apiKey: t.key, serverURL: t.apiUrl });
  base = `http://127.0.0.1:${t.server.port}`;
  // The owner's own access check: one access key is let in.
  receiver = await startReceiver(({ body }) => (body?.accessKey === "let-me-in" ? 200 : 403));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  for (const p of pushes) p.child.kill("SIGKILL");
  await receiver?.close();
  await t?.stop();
});

/** A stream live over RTMP, as the SDK made it. */
async function liveStream(body: Parameters<Livepeer["stream"]["create"]>[0], seconds = 60) {
  const stream = (await sdk.stream.create(body)).stream!;
  pushes.push(pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${stream.streamKey}`, { seconds }));
  await waitFor("the stream to be live", async () => (await sdk.stream.get(stream.id!)).stream?.isActive);
  return stream;
}


/** A signing key with its private half, which only the creating answer carries (the SDK's model drops it). */
async function newKey(apiKey: string): Promise<{ id: string; privateKey: string; publicKey: string }> {
  const res = await apiClient(t.apiUrl, apiKey)("POST", "/access-control/signing-key", {});
  expect(res.status).toBe(200);
  expect(res.body.privateKey).toBeTruthy();
  return res.body;
}

const get = (path: string, headers: Record<string, string> = {}) => fetch(new URL(path, base), { headers });
const lines = (text: string) => text.split("\n").filter((l) => l !== "" && !l.startsWith("#"));

describe("a jwt stream", () => {
  let stream: Awaited<ReturnType<typeof liveStream>>;
  let key: { id: string; privateKey: string; publicKey: string };

  beforeAll(async () => {
    key = await newKey(t.key);
    stream = await liveStream({ name: "members only", playbackPolicy: { type: "jwt" as never } });
    expect((await sdk.stream.get(stream.id!)).stream?.playbackPolicy?.type).toBe("jwt");
    expect((await sdk.playback.get(stream.playbackId!)).playbackInfo?.meta.playbackPolicy?.type).toBe("jwt");
  });

  const master = (query: string, headers?: Record<string, string>) => get(`/hls/${stream.playbackId}/index.m3u8${query}`, headers);

  it("is 401 without a token, with an expired one, with another user's key and with a disabled key", async () => {
    const expectRefused = async (res: Response, reason: RegExp) => {
      expect(res.status).toBe(401);
      expect(((await res.json()) as { errors: string[] }).errors[0]).toMatch(reason);
    };
    await expectRefused(await master(""), /needs a playback JWT/);
    await expectRefused(await get(`/hls/${stream.playbackId}/0/index.m3u8`), /needs a playback JWT/);
    await expectRefused(await get(`/hls/${stream.playbackId}/0/init.mp4`), /needs a playback JWT/);
    await expectRefused(await master(`?jwt=${await signJwt(key, stream.playbackId!, -60)}`), /expired/);
    await expectRefused(await master(`?jwt=${await signJwt(key, "0000000000000000", 60)}`), /another playback id/);

    const strangersKey = await newKey(await t.keyFor("stranger"));
    await expectRefused(await master(`?jwt=${await signJwt(strangersKey, stream.playbackId!, 60)}`), /not one of the stream owner's/);

    const spare = await newKey(t.key);
    const spareJwt = await signJwt(spare, stream.playbackId!, 60);
    expect((await sdk.accessControl.update({ disabled: true }, spare.id!)).statusCode).toBe(204);
    await expectRefused(await master(`?jwt=${spareJwt}`), /not one of the stream owner's|disabled/);
    await expectRefused(await master("", { "livepeer-jwt": spareJwt }), /not one of the stream owner's|disabled/);
  });

  it("plays with the token in a Livepeer-Jwt header on the master alone, as Livepeer's player sends it, cross-origin", async () => {
    const jwt = await signJwt(key, stream.playbackId!, 3600);
    // The browser asks leave for the header first (a preflight), then sends it with the master only.
    const preflight = await fetch(new URL(`/hls/${stream.playbackId}/index.m3u8`, base), { method: "OPTIONS", headers: { origin: "http://player.example", "access-control-request-method": "GET", "access-control-request-headers": "livepeer-jwt" } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-headers")).toMatch(/Livepeer-Jwt/i);
    const res = await master("", { "livepeer-jwt": jwt });
    expect(res.status).toBe(200);
    const variant = lines(await res.text())[0]!;
    const playlist = await get(`/hls/${stream.playbackId}/${variant}`);
    expect(playlist.status).toBe(200);
    expect(await playlist.text()).toMatch(/#EXTINF/);
  });

  it("plays with a valid one; media URLs carry tokens; a copied segment URL fails after the token's lifetime while the session goes on", async () => {
    const jwt = await signJwt(key, stream.playbackId!, 3600);
    const res = await master(`?jwt=${jwt}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("private, no-cache");
    const variant = lines(await res.text())[0]!;
    expect(variant).toMatch(/^0\/index\.m3u8\?s=/);
    const playlistUrl = `/hls/${stream.playbackId}/${variant}`;
    const playlist = async () => {
      const r = await get(playlistUrl);
      expect(r.status).toBe(200);
      return r.text();
    };
    const text = await playlist();
    expect(text).toMatch(/#EXT-X-MAP:URI="[\w-]+\.mp4\?m=/);
    const segment = lines(text).at(-1)!;
    expect(segment).toMatch(/\.m4s\?m=/);
    const copied = `/hls/${stream.playbackId}/0/${segment}`;
    expect((await get(copied)).status).toBe(200);
    // The same segment without its token, or with another playback's: refused.
    expect((await get(copied.replace(/\?m=.*$/, ""))).status).toBe(401);
    // The player keeps reloading its playlist (its session goes on with fresh media tokens);
    // the copied URL stops working once its token has expired.
    const copiedAt = Date.now();
    await waitFor("the copied segment URL to be refused", async () => {
      const fresh = lines(await playlist()).at(-1)!;
      expect((await get(`/hls/${stream.playbackId}/0/${fresh}`)).status).toBe(200);
      return (await get(copied)).status === 401;
    }, 20_000, 500);
    expect(Date.now() - copiedAt).toBeGreaterThanOrEqual((TOKEN_SECONDS - 1) * 1000);
  });

  it("checks the JWT on every playlist reload: past its exp, the session ends", async () => {
    const jwt = await signJwt(key, stream.playbackId!, 2);
    const res = await master(`?jwt=${jwt}`);
    expect(res.status).toBe(200);
    const playlistUrl = `/hls/${stream.playbackId}/${lines(await res.text())[0]!}`;
    expect(new URL(playlistUrl, base).searchParams.get("jwt")).toBe(jwt);
    expect((await get(playlistUrl)).status).toBe(200);
    // exp + the 5 s clock skew + the 5 s a verdict is kept.
    const refused = await waitFor("the reload to be refused", async () => {
      const r = await get(playlistUrl);
      return r.status === 401 ? ((await r.json()) as { errors: string[] }) : undefined;
    }, 20_000, 500);
    expect(refused.errors[0]).toMatch(/expired/);
  });

  it("plays through the player page given ?jwt= (over WebRTC, the page's first choice), and not without it", async () => {
    const jwt = await signJwt(key, stream.playbackId!, 3600);
    const { page, problems } = await openPage(browser, `${base}/play/${stream.playbackId}?jwt=${encodeURIComponent(jwt)}`);
    try {
      await videoAt(page, 2, 30_000);
      expect(await page.getAttribute("#player", "data-protocol")).toBe("webrtc");
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
    const { page: refused } = await openPage(browser, `${base}/play/${stream.playbackId}`);
    try {
      await refused.waitForSelector("#error", { state: "visible", timeout: 15_000 });
      expect(await refused.locator("#error-text").textContent()).toMatch(/needs a valid playback token/);
      expect(await refused.evaluate(() => (globalThis as any).document.getElementById("video").currentTime)).toBe(0);
    } finally {
      await refused.close();
    }
  });
});

const videoAt = (page: Page, min: number, timeout: number) =>
  page.waitForFunction((m) => (globalThis as any).document.getElementById("video").currentTime >= m, min, { timeout });

describe("a webhook stream", () => {
  it("plays with an access key the owner's webhook admits, and not with another", async () => {
    const webhook = (await sdk.webhook.create({ name: "access", url: receiver.url, events: [Events.StreamStarted] })).webhook!;
    const stream = await liveStream({ name: "ask me", playbackPolicy: { type: "webhook" as never, webhookId: webhook.id, webhookContext: { plan: "gold" } } }, 30);
    const before = receiver.received.length;
    expect((await get(`/hls/${stream.playbackId}/index.m3u8?accessKey=let-me-in`)).status).toBe(200);
    expect((await get(`/hls/${stream.playbackId}/index.m3u8?accessKey=wrong`)).status).toBe(401);
    expect((await get(`/hls/${stream.playbackId}/index.m3u8`)).status).toBe(401);
    // The access requests only: the webhook's stream.started delivery may come in meanwhile
    // (it is queued, and on a loaded machine it arrived after the stream was live).
    const asked = receiver.received.slice(before).map((r) => r.body).filter((body) => !("event" in body));
    expect(asked).toEqual([
      { accessKey: "let-me-in", context: { plan: "gold" }, timestamp: expect.any(Number) },
      { accessKey: "wrong", context: { plan: "gold" }, timestamp: expect.any(Number) },
    ]);
  });

  it("refuses a policy naming a webhook the caller does not have", async () => {
    const api = apiClient(t.apiUrl, t.key);
    const res = await api("POST", "/stream", { name: "x", playbackPolicy: { type: "webhook", webhookId: "nope" } });
    expect(res.status).toBe(422);
    expect(res.body.errors[0]).toMatch(/webhookId/);
  });
});

describe("viewers", () => {
  it("three headless players are three viewers within 30 s, and none once they stop", async () => {
    const stream = await liveStream({ name: "popular" }, 90);
    const views = async () => {
      const rows = (await sdk.metrics.getRealtimeViewership(stream.playbackId!)).data ?? [];
      return rows.find((r) => r.playbackId === stream.playbackId)?.viewCount ?? 0;
    };
    expect(await views()).toBe(0);
    const players = await Promise.all([0, 1, 2].map(() => openPage(browser, `${base}/play/${stream.playbackId}`)));
    try {
      await Promise.all(players.map(({ page }) => videoAt(page, 1, 30_000)));
      await waitFor("3 viewers", async () => (await views()) === 3, 30_000, 500);
    } finally {
      await Promise.all(players.map(({ page }) => page.close()));
    }
    await waitFor("0 viewers", async () => (await views()) === 0, (VIEWER_WINDOW_SECONDS + 10) * 1000, 500);
  });
});
