import fs from "node:fs";
import { dropTestDatabase } from "../helpers/database";
import { probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { apiClient, startTestServer, tempDir, type Api, type TestServer } from "../helpers/server";

// What a clip may cost, over real RTMP and real ffmpeg: "the last N s" asked with endTime =
// now is cut up to the newest media; past MAX_ASSETS_PER_USER or MAX_CLIP_MB_PER_USER a clip
// is a 400 naming the setting; the same pending range asked twice is one asset; and a cut that
// would eat into STORAGE_MIN_FREE_MB is refused (a restart on the same data with a minimum no
// disk has, rather than a full disk).

const GOP_SECONDS = 2;
// Constant 1 Mb/s (x264's filler keeps it so): a 2 s clip is about 0.27 MB, 20 s about 2.7 MB.
const CBR = ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", String(30 * GOP_SECONDS), "-keyint_min", String(30 * GOP_SECONDS), "-sc_threshold", "0", "-pix_fmt", "yuv420p",
  "-b:v", "1000k", "-minrate", "1000k", "-maxrate", "1000k", "-bufsize", "1000k", "-x264-params", "nal-hrd=cbr"];
const ENV = { HLS_SEGMENT_SECONDS: String(GOP_SECONDS), HLS_LIST_SIZE: "3", MAX_ASSETS_PER_USER: "2", MAX_CLIP_MB_PER_USER: "2" };

const dataDir = tempDir();
let t: TestServer;
let api: Api;
let stream: { id: string; playbackId: string; streamKey: string };
let push: Push;
/** Wall-clock start of the session's first segment, as its live playlist dated it. */
let firstSegment: number;

beforeAll(async () => {
  t = await startTestServer(ENV, { dataDir });
  api = apiClient(t.apiUrl, t.key);
  stream = (await api("POST", "/stream", { name: "clipped within limits", record: true, profiles: [] })).body;
  push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${stream.streamKey}`, { seconds: 30, size: "640x360", codec: CBR });
  firstSegment = await waitFor("the first segment", async () => (await liveWindow())[0]?.start, 20_000, 200);
}, 30_000);
afterAll(async () => {
  push?.child.kill("SIGKILL");
  await push?.exited;
  await t?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
  await dropTestDatabase(dataDir);
});

/** The complete segments of the live playlist: their wall-clock start and end. */
async function liveWindow(): Promise<{ start: number; end: number }[]> {
  const base = `http://127.0.0.1:${t.server.port}/hls/${stream.playbackId}/`;
  const master = await fetch(base + "index.m3u8");
  if (master.status !== 200) return [];
  const variant = (await master.text()).split("\n").find((l) => l.trim() !== "" && !l.startsWith("#"));
  const out: { start: number; end: number }[] = [];
  let pdt: number | undefined;
  for (const line of (await (await fetch(base + variant!.trim())).text()).split("\n")) {
    if (line.startsWith("#EXT-X-PROGRAM-DATE-TIME:")) pdt = Date.parse(line.slice(25));
    else if (line.startsWith("#EXTINF:") && pdt !== undefined) out.push({ start: pdt, end: pdt + parseFloat(line.slice(8)) * 1000 });
  }
  return out;
}
const newestMedia = async () => (await liveWindow()).at(-1)?.end ?? 0;

async function ready(id: string) {
  return waitFor(`asset ${id} ready`, async () => {
    const got = (await api("GET", `/asset/${id}`)).body;
    if (got.status.phase === "failed") throw new Error(`clip failed: ${got.status.errorMessage}`);
    return got.status.phase === "ready" ? got : undefined;
  }, 30_000, 250);
}

let sessionId: string;

describe("clip limits", () => {
  it("a clip of the last 4 s asked with endTime = Date.now() is made, and covers up to the newest media; 30 s ahead is a 400", async () => {
    await waitFor("8 s of the session", async () => (await newestMedia()) - firstSegment >= 8000, 30_000, 250);
    // As a viewer asks: between segments, the newest media some way behind the wall clock.
    await waitFor("the newest media 0.5 s behind now", async () => Date.now() - (await newestMedia()) >= 500, 10_000, 50);
    const before = await newestMedia();
    const now = Date.now();
    const created = await api("POST", "/clip", { playbackId: stream.playbackId, startTime: now - 4000, endTime: now, name: "the last 4 s" });
    const after = await newestMedia();
    expect(created.status).toBe(200);
    const asset = created.body.asset;
    sessionId = asset.source.sessionId;
    // Up to the newest media the clip window held: the live playlist's newest as the request
    // came (the window keeps its copy a moment after the playlist lists it: one segment of slack).
    expect(asset.source.endTime).toBeLessThan(now);
    expect(asset.source.endTime).toBeGreaterThanOrEqual(before - GOP_SECONDS * 1000 - 50);
    expect(asset.source.endTime).toBeLessThanOrEqual(after + 50);
    // From the keyframe at or before the start asked for.
    expect(asset.source.startTime).toBeLessThanOrEqual(now - 4000);
    expect(asset.source.startTime).toBeGreaterThan(now - 4000 - GOP_SECONDS * 1000 - 50);
    const made = await ready(asset.id);
    const mp4 = await probe(made.downloadUrl);
    expect(mp4.duration).toBeCloseTo((asset.source.endTime - asset.source.startTime) / 1000, 0);

    const ahead = await api("POST", "/clip", { playbackId: stream.playbackId, startTime: now - 4000, endTime: Date.now() + 30_000 });
    expect(ahead.status).toBe(400);
    // The server's now is a little later than the test's (a loaded host took 0.2 s): 30 s ahead reads as 2x.x or 30.0 s.
    expect(ahead.body.errors[0]).toMatch(/endTime is (2\d|30)\.\d s after now: at most 10 s after now is read as "up to the newest media"/);
  }, 60_000);

  it("the same range asked twice at once is one asset; one more past MAX_ASSETS_PER_USER is a 400 naming it", async () => {
    const start = firstSegment + 100;
    const [a, b] = await Promise.all([0, 1].map(() => api("POST", "/clip", { playbackId: stream.playbackId, startTime: start, endTime: start + 1500 })));
    expect([a!.status, b!.status]).toEqual([200, 200]);
    expect(a!.body.asset.id).toBe(b!.body.asset.id);
    expect(a!.body.asset.source).toMatchObject({ startTime: firstSegment, endTime: start + 1500 });
    await ready(a!.body.asset.id);

    const third = await api("POST", "/clip", { playbackId: stream.playbackId, startTime: start + 2000, endTime: start + 3500 });
    expect(third.status).toBe(400);
    expect(third.body).toEqual({ errors: ["at most 2 assets per user (MAX_ASSETS_PER_USER); this user has 2: delete some first"] });
  }, 60_000);

  it("a clip whose bytes would pass MAX_CLIP_MB_PER_USER is a 400 naming it; a smaller one still fits", async () => {
    const assets = (await api("GET", "/asset")).body as { id: string; name: string }[];
    const lastFour = assets.find((a) => a.name === "the last 4 s")!;
    expect((await api("DELETE", `/asset/${lastFour.id}`)).status).toBe(204);
    await waitFor("20 s of the session", async () => (await newestMedia()) - firstSegment >= 21_000, 40_000, 250);
    const big = await api("POST", "/clip", { playbackId: stream.playbackId, startTime: firstSegment, endTime: firstSegment + 20_000 });
    expect(big.status).toBe(400);
    expect(big.body.errors).toHaveLength(1);
    expect(big.body.errors[0]).toMatch(/^at most 2 MiB of clips per user \(MAX_CLIP_MB_PER_USER\); this user's hold 1 MiB and this clip needs about [3-9] MiB: delete some first$/);
    const small = await api("POST", "/clip", { playbackId: stream.playbackId, startTime: firstSegment + 4000, endTime: firstSegment + 6000 });
    expect(small.status).toBe(200);
    await ready(small.body.asset.id);
  }, 60_000);

  it("a cut that would leave less than STORAGE_MIN_FREE_MB free is refused: 503, Retry-After, naming the setting", async () => {
    await push.exited;
    await waitFor("the recording ready", async () => (await api("GET", `/session/${sessionId}`)).body.recordingStatus === "ready", 30_000, 250);
    await t.stop();
    // More than any disk here has: live sessions could not start either, but the recording is there to clip.
    t = await startTestServer({ ...ENV, STORAGE_MIN_FREE_MB: "1000000" }, { dataDir });
    api = apiClient(t.apiUrl, t.key);
    for (const a of (await api("GET", "/asset")).body as { id: string }[]) await api("DELETE", `/asset/${a.id}`);
    const refused = await api("POST", "/clip", { playbackId: stream.playbackId, sessionId, startTime: firstSegment + 2000, endTime: firstSegment + 4000 });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(refused.body.errors).toHaveLength(1);
    expect(refused.body.errors[0]).toMatch(/^not enough free space for the clip: it needs about 1 MiB and 1000000 MiB must stay free for live sessions \(STORAGE_MIN_FREE_MB\), but only \d+ MiB are free; try again later$/);
    expect((await api("GET", "/asset")).body).toEqual([]);
  }, 90_000);
});
