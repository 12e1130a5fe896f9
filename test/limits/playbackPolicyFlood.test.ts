import { importPKCS8, SignJWT } from "jose";
import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { apiClient, startTestServer, type Api, type TestServer } from "../helpers/server";
import { startReceiver, type Receiver } from "../helpers/receiver";

// Playback policies under hostile load, over real HTTP against a real server with
// live RTMP streams and a real webhook receiver: a flood of made-up access keys costs the owner a
// bounded number of POSTs, viewers already let in keep playing, a new viewer is told "later"
// (503), never refused; a viewer counts only once admitted, and session tokens expire.

const RATE = 5; // PLAYBACK_WEBHOOK_RATE: new questions a second per playback id, a burst of twice it
const FLOOD = 1000;

let t: TestServer;
let api: Api;
let base: string;
let receiver: Receiver;
const pushes: Push[] = [];

beforeAll(async () => {
  t = await startTestServer({
    HLS_SEGMENT_SECONDS: "1",
    PLAYBACK_WEBHOOK_RATE: String(RATE),
    PLAYBACK_WEBHOOK_CONCURRENCY: "4",
    PLAYBACK_SESSION_SECONDS: "5",
    VIEWER_WINDOW_SECONDS: "1",
  });
  api = apiClient(t.apiUrl, t.key);
  base = `http://127.0.0.1:${t.server.port}`;
  // The owner's webhook: slow (200 ms), lets in keys starting "good-".
  receiver = await startReceiver(({ body }) => ({ status: String(body?.accessKey).startsWith("good-") ? 200 : 403, afterMs: 200 }));
});
afterAll(async () => {
  for (const p of pushes) p.child.kill("SIGKILL");
  await receiver?.close();
  await t?.stop();
});

async function liveStream(body: object): Promise<{ id: string; playbackId: string }> {
  const res = await api("POST", "/stream", { name: "gated", ...body });
  expect(res.status).toBe(201);
  pushes.push(pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${res.body.streamKey}`, { seconds: 90 }));
  await waitFor("the stream to be live", async () => (await api("GET", `/stream/${res.body.id}`)).body.isActive, 30_000);
  return res.body;
}

const get = (path: string) => fetch(new URL(path, base));
const firstUri = (text: string) => text.split("\n").find((l) => l !== "" && !l.startsWith("#"))!;

/** Runs `task(i)` for i < n, `parallel` at a time. */
async function pool(n: number, parallel: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < n) await task(next++);
  }));
}

describe("a webhook-gated stream flooded with made-up access keys", () => {
  it("costs a bounded number of POSTs; a viewer let in keeps getting its playlist; new viewers get 503 (never 401), then in", async () => {
    const webhook = (await api("POST", "/webhook", { name: "access", url: receiver.url, events: ["stream.started"] })).body;
    // A 1 s refresh: the known viewer's verdict goes stale during the flood and is asked again.
    const stream = await liveStream({ playbackPolicy: { type: "webhook", webhookId: webhook.id, refreshInterval: 1 } });
    const master = await get(`/hls/${stream.playbackId}/index.m3u8?accessKey=good-known`);
    expect(master.status).toBe(200);
    const playlistUrl = `/hls/${stream.playbackId}/${firstUri(await master.text())}`;
    expect((await get(playlistUrl)).status).toBe(200);
    const before = receiver.received.length;

    const floodAnswers = new Map<number, number>();
    const knownAnswers: number[] = [];
    let flooding = true;
    const started = performance.now();
    const known = (async () => {
      while (flooding) {
        const res = await get(playlistUrl);
        knownAnswers.push(res.status);
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const flood = pool(FLOOD, 100, async (i) => {
      const res = await get(`/hls/${stream.playbackId}/index.m3u8?accessKey=flood-${i}`);
      floodAnswers.set(res.status, (floodAnswers.get(res.status) ?? 0) + 1);
      if (res.status === 503) expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      await res.arrayBuffer();
    });
    // A new viewer the owner would let in, arriving mid-flood: later (503), never refused.
    const during = await get(`/hls/${stream.playbackId}/index.m3u8?accessKey=good-during`);
    expect([200, 503]).toContain(during.status);
    await flood;
    // The known viewer plays on until its verdict went stale and was asked again (a 1 s refresh):
    // a flood answered in under a second ends before that.
    await receiver.waitFor((r) => r.slice(before).some((p) => p.body?.accessKey === "good-known"), "the known viewer's re-check", 10_000);
    flooding = false;
    await known;
    const elapsedS = (performance.now() - started) / 1000;
    const posts = receiver.received.slice(before);

    // Only the webhook refuses: every made-up key was refused by it or told to come back later.
    expect([...floodAnswers.keys()].every((s) => s === 401 || s === 503)).toBe(true);
    expect(floodAnswers.get(503)).toBeGreaterThan(FLOOD / 2);
    // The burst, the rate over the flood, the known viewer's re-checks (one a second) and the new viewer.
    const bound = 2 * RATE + RATE * Math.ceil(elapsedS) + Math.ceil(elapsedS) + 1 + 1;
    expect(posts.length).toBeLessThanOrEqual(bound);
    expect(posts.filter((p) => String(p.body.accessKey).startsWith("flood-")).length).toBeLessThanOrEqual(2 * RATE + RATE * Math.ceil(elapsedS));
    // The known viewer was re-checked (its verdict went stale) and never waited or failed.
    expect(posts.some((p) => p.body.accessKey === "good-known")).toBe(true);
    expect(knownAnswers.length).toBeGreaterThan(0);
    expect(knownAnswers.every((s) => s === 200)).toBe(true);

    // After the flood, a new viewer is let in (it follows Retry-After if the bucket is still empty).
    const after = await waitFor("the new viewer to be let in", async () => {
      const res = await get(`/hls/${stream.playbackId}/index.m3u8?accessKey=good-after`);
      expect([200, 503]).toContain(res.status);
      return res.status === 200 ? res : undefined;
    }, 10_000, 500);
    expect(firstUri(await after.text())).toMatch(/^0\/index\.m3u8\?s=.*&accessKey=good-after$/);
  });

  it("an offline stream's playback costs no question", async () => {
    const webhook = (await api("POST", "/webhook", { name: "access", url: receiver.url, events: ["stream.started"] })).body;
    const res = await api("POST", "/stream", { name: "never live", playbackPolicy: { type: "webhook", webhookId: webhook.id } });
    const before = receiver.received.length;
    for (let i = 0; i < 20; i++) expect((await get(`/hls/${res.body.playbackId}/index.m3u8?accessKey=offline-${i}`)).status).toBe(404);
    expect(receiver.received.length).toBe(before);
  });
});

/** A JWT as @livepeer/core's signAccessJwt makes it, with the key as the API returned it. */
async function signJwt(key: { privateKey: string; publicKey: string }, playbackId: string): Promise<string> {
  const privateKey = await importPKCS8(Buffer.from(key.privateKey, "base64").toString("utf8"), "ES256");
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ sub: playbackId, pub: key.publicKey }).setProtectedHeader({ alg: "ES256", typ: "JWT" }).setIssuedAt(now).setExpirationTime(now + 3600).sign(privateKey);
}

describe("viewers of a gated stream", () => {
  let stream: { id: string; playbackId: string };
  let jwt: string;
  beforeAll(async () => {
    const key = (await api("POST", "/access-control/signing-key", {})).body;
    stream = await liveStream({ playbackPolicy: { type: "jwt" } });
    jwt = await signJwt(key, stream.playbackId);
  });
  const viewerOf = (uri: string) => new URLSearchParams(uri.split("?")[1]).get("s")!.split(".")[0]!;
  const counted = () => t.server.viewers.counts().get(stream.playbackId) ?? 0;

  it("count only once the credential is checked: a refused reload with a good session token counts nobody", async () => {
    const variant = firstUri(await (await get(`/hls/${stream.playbackId}/index.m3u8?jwt=${jwt}`)).text());
    const session = new URLSearchParams(variant.split("?")[1]).get("s")!;
    for (let i = 0; i < 3; i++) expect((await get(`/hls/${stream.playbackId}/0/index.m3u8?s=${session}`)).status).toBe(401);
    expect(counted()).toBe(0);
    expect((await get(`/hls/${stream.playbackId}/0/index.m3u8?s=${session}&jwt=${jwt}`)).status).toBe(200);
    expect(counted()).toBe(1);
  });

  it("an expired session token is not honoured; one whose player keeps reloading is", async () => {
    const open = async (query: string) => firstUri(await (await get(`/hls/${stream.playbackId}/index.m3u8?jwt=${jwt}${query}`)).text());
    const idle = await open("");
    const watching = await open("");
    const session = (uri: string) => new URLSearchParams(uri.split("?")[1]).get("s")!;
    const expires = Math.max(...[idle, watching].map((u) => Number(session(u).split(".")[1])));
    const reload = async (uri: string) => {
      const res = await get(`/hls/${stream.playbackId}/${uri}`);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    };
    // One player reloads its playlist all along; the other shows its token again only after expiry.
    await waitFor("the session tokens to expire", async () => {
      await reload(watching);
      return Date.now() > expires * 1000 + 1500;
    }, 15_000, 300);
    expect(viewerOf(await open(`&s=${session(idle)}`))).not.toBe(viewerOf(idle));
    expect(viewerOf(await open(`&s=${session(watching)}`))).toBe(viewerOf(watching));
    // The expired token's reload plays (the JWT is good) but counts nobody.
    await reload(idle);
    expect(t.server.viewers.watching(stream.playbackId, viewerOf(idle))).toBe(false);
    expect(t.server.viewers.watching(stream.playbackId, viewerOf(watching))).toBe(true);
  });
});
