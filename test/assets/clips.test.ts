import fs from "node:fs";
import path from "node:path";
import { Livepeer } from "livepeer";
import { apiClient } from "../helpers/server";
import { probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { useWatchedServer } from "../helpers/watched";

// Clips as assets, end to end: real ffmpeg pushes testsrc2 over RTMP with a 2 s GOP, the
// official SDK (unmodified) clips 10 s of a live stream, the clip job cuts it (copy, at
// keyframes), and the MP4 and HLS it serves are probed; asset.ready reaches a real receiver.

const GOP_SECONDS = 2;
// The live playlist lists 3 segments (6 s): a 10 s clip of an unrecorded stream reaches back
// past it into the clip window (CLIP_WINDOW_SECONDS, 300 s by default).
const fx = useWatchedServer({ HLS_SEGMENT_SECONDS: String(GOP_SECONDS), HLS_LIST_SIZE: "3" }, ["asset.ready", "asset.failed"]);
const { api, received } = fx;

const X264 = ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", String(30 * GOP_SECONDS), "-keyint_min", String(30 * GOP_SECONDS), "-sc_threshold", "0", "-pix_fmt", "yuv420p", "-b:v", "500k"];

interface Pushed {
  stream: { id: string; playbackId: string; streamKey: string };
  push: Push;
  /** Wall-clock start of the session's first segment, as its live playlist dated it. */
  firstSegmentStart: Promise<number>;
}

let sdk: Livepeer;
/** 20 s, not recorded: clipped live. */
let live: Pushed;
/** 10 s, recorded: clipped from its recording once it has ended. */
let recorded: Pushed;

async function startPush(name: string, record: boolean, seconds: number): Promise<Pushed> {
  const stream = (await api("POST", "/stream", { name, record, profiles: [] })).body;
  const push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${stream.streamKey}`, { seconds, codec: X264 });
  const firstSegmentStart = waitFor(`${name}: its first segment`, async () => (await liveWindow(stream.playbackId))[0]?.start, 20_000, 200);
  return { stream, push, firstSegmentStart };
}

beforeAll(async () => {
  sdk = new Livepeer({ apiKey: fx.t.key, serverURL: fx.t.apiUrl });
  [live, recorded] = await Promise.all([startPush("clipped live", false, 20), startPush("clipped recorded", true, 10)]);
});
afterAll(async () => {
  for (const p of [live, recorded]) p?.push.child.kill("SIGKILL");
  await Promise.all([live?.push.exited, recorded?.push.exited]);
});

/** The complete segments of the live rendition playlist: their wall-clock start and length. */
async function liveWindow(playbackId: string): Promise<{ start: number; seconds: number }[]> {
  const base = `http://127.0.0.1:${fx.t.server.port}/hls/${playbackId}/`;
  const master = await fetch(base + "index.m3u8");
  if (master.status !== 200) return [];
  const variant = (await master.text()).split("\n").find((l) => l.trim() !== "" && !l.startsWith("#"));
  if (!variant) return [];
  const text = await (await fetch(base + variant.trim())).text();
  const out: { start: number; seconds: number }[] = [];
  let pdt: number | undefined;
  for (const line of text.split("\n")) {
    if (line.startsWith("#EXT-X-PROGRAM-DATE-TIME:")) pdt = Date.parse(line.slice(25));
    else if (line.startsWith("#EXTINF:") && pdt !== undefined) out.push({ start: pdt, seconds: parseFloat(line.slice(8)) });
  }
  return out;
}

const AAC_AND_H264 = [
  { codec_type: "audio", codec_name: "aac" },
  { codec_type: "video", codec_name: "h264" },
];
const codecs = (streams: { codec_type: string; codec_name: string }[]) =>
  streams.map((s) => ({ codec_type: s.codec_type, codec_name: s.codec_name })).sort((a, b) => a.codec_type.localeCompare(b.codec_type));

describe("clips", () => {
  let stream: Pushed["stream"];
  let sessionId: string;

  it("a 10 s clip of a live stream: an MP4 within one GOP of 10 s and an HLS rendition, H.264 + AAC, asset.ready delivered", async () => {
    stream = live.stream;
    const first = await live.firstSegmentStart;
    // 12 s of complete segments since the first: a clip of 10 s from one second in (mid-GOP)
    // fits, though the live playlist itself lists only the last 6 s by then.
    const window = await waitFor("12 s of the session", async () => {
      const w = await liveWindow(stream.playbackId);
      const last = w[w.length - 1];
      return last && last.start + last.seconds * 1000 - first >= 12_000 ? w : undefined;
    }, 30_000, 250);
    expect(window[0]!.start).toBeGreaterThan(first + 1000);
    const startTime = first + 1000;

    const created = await sdk.stream.createClip({ playbackId: stream.playbackId, startTime, endTime: startTime + 10_000, name: "ten seconds" });
    expect(created.statusCode).toBe(200);
    const { asset, task } = created.data!;
    expect(task.id).toBeTruthy();
    expect(asset).toMatchObject({ name: "ten seconds", userId: expect.any(String), source: { type: "clip", playbackId: stream.playbackId, sourceId: stream.id } });
    expect(["waiting", "processing"]).toContain(asset.status!.phase);
    expect(asset.playbackId).toMatch(/^[0-9a-z]{16}$/);
    expect(asset.playbackId).not.toBe(stream.playbackId);
    expect(asset).not.toHaveProperty("downloadUrl");
    sessionId = (asset.source as { sessionId: string }).sessionId;

    const ready = await waitFor("the asset ready", async () => {
      const got = (await sdk.asset.get(asset.id)).asset!;
      if (got.status!.phase === "failed") throw new Error(`clip failed: ${got.status!.errorMessage}`);
      return got.status!.phase === "ready" ? got : undefined;
    }, 30_000, 250);
    expect(ready.playbackUrl).toMatch(new RegExp(`/vod/${asset.playbackId}/index\\.m3u8$`));
    expect(ready.downloadUrl).toMatch(new RegExp(`/vod/${asset.playbackId}/video\\.mp4$`));
    expect(ready.size).toBeGreaterThan(100_000);
    expect(ready.videoSpec).toMatchObject({ format: "mp4", tracks: expect.arrayContaining([expect.objectContaining({ type: "video", codec: "h264", width: 320, height: 180 }), expect.objectContaining({ type: "audio", codec: "aac" })]) });

    // Cut at the keyframe before startTime: at least the 10 s asked for, at most one GOP more.
    const mp4 = await probe(ready.downloadUrl!);
    expect(mp4.duration).toBeGreaterThan(10 - 0.1);
    expect(mp4.duration).toBeLessThan(10 + GOP_SECONDS + 0.1);
    expect(codecs(mp4.streams)).toEqual(AAC_AND_H264);
    expect(ready.videoSpec!.duration).toBeCloseTo(mp4.duration, 0);
    const hls = await probe(ready.playbackUrl!);
    expect(Math.abs(hls.duration - mp4.duration)).toBeLessThan(0.2);
    expect(codecs(hls.streams)).toEqual(AAC_AND_H264);
    // Players seek in the MP4 with ranges; its moov comes first (+faststart).
    const head = await fetch(ready.downloadUrl!, { headers: { range: "bytes=0-63" } });
    expect(head.status).toBe(206);
    expect(Buffer.from(await head.arrayBuffer()).includes(Buffer.from("moov"))).toBe(true);

    const delivered = await waitFor("asset.ready delivered", () => received().find((e) => e.event === "asset.ready" && (e.payload as { assetId?: string }).assetId === asset.id), 10_000);
    expect(delivered.stream.id).toBe(stream.id);
    expect(delivered.payload).toMatchObject({ sessionId, asset: { id: asset.id, status: { phase: "ready" }, downloadUrl: ready.downloadUrl, playbackUrl: ready.playbackUrl } });

    // The asset's playback id plays as a VOD.
    const info = await sdk.playback.get(asset.playbackId!);
    expect(info.playbackInfo).toMatchObject({ type: "vod" });
    expect(info.playbackInfo!.meta.source.map((s) => [s.hrn, s.url])).toEqual([
      ["HLS (TS)", ready.playbackUrl],
      ["MP4", ready.downloadUrl],
    ]);

    // The clip is listed by the stream, the session and the asset list.
    expect((await sdk.stream.getClips(stream.id)).data!.map((a) => a.id)).toEqual([asset.id]);
    expect((await sdk.session.getClips(sessionId)).data!.map((a) => a.id)).toEqual([asset.id]);
    expect((await sdk.asset.getAll()).data!.map((a) => a.id)).toContain(asset.id);

    // Without endTime, a clip runs to the newest media there is: here at least 12 s after the first segment.
    const open = await sdk.stream.createClip({ playbackId: stream.playbackId, startTime: first + 2000 });
    const toEdge = await waitFor("the open-ended clip ready", async () => {
      const got = (await sdk.asset.get(open.data!.asset.id)).asset!;
      return got.status!.phase === "ready" ? got : undefined;
    }, 30_000, 250);
    const lastEnd = window[window.length - 1]!.start + window[window.length - 1]!.seconds * 1000;
    expect(toEdge.videoSpec!.duration).toBeGreaterThan((lastEnd - (first + 2000)) / 1000 - 0.1);
  });

  it("refuses a range outside what exists (400 saying what does), another user's playback id (404), endTime <= startTime (422)", async () => {
    const hourAgo = Date.now() - 3600_000;
    const outside = await api("POST", "/clip", { playbackId: stream.playbackId, startTime: hourAgo, endTime: hourAgo + 10_000 });
    expect(outside.status).toBe(400);
    expect(outside.body.errors[0]).toMatch(/not within what can be clipped of session \S+: the live window holds \S+Z to \S+Z \(startTime \d+ to endTime \d+\)$/);

    const bob = apiClient(fx.t.apiUrl, await fx.t.keyFor("bob"));
    const now = Date.now();
    const other = await bob("POST", "/clip", { playbackId: stream.playbackId, startTime: now - 5000, endTime: now - 1000 });
    expect(other.status).toBe(404);
    expect(other.body.errors[0]).toMatch(/playback id .* not found/);
    // Bob's view of the first user's clips: none of them.
    expect((await bob("GET", `/stream/${stream.id}/clips`)).status).toBe(404);
    expect((await bob("GET", `/session/${sessionId}/clips`)).status).toBe(404);

    for (const endTime of [now - 5000, now - 6000]) {
      const backwards = await api("POST", "/clip", { playbackId: stream.playbackId, startTime: now - 5000, endTime });
      expect(backwards.status).toBe(422);
      expect(backwards.body.errors).toEqual([`endTime: must be after startTime (${now - 5000})`]);
    }
    const tooLong = await api("POST", "/clip", { playbackId: stream.playbackId, startTime: now - 700_000, endTime: now });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.errors[0]).toMatch(/at most 600 s long \(MAX_CLIP_SECONDS\)/);
    await expect(sdk.stream.createClip({ playbackId: "nosuchplaybackid", startTime: now - 5000, endTime: now })).rejects.toMatchObject({ statusCode: 404 });
  });

  it("after the stream ends, a clip of the session's recording (sessionId); delete removes the asset and its files", async () => {
    stream = recorded.stream;
    expect((await recorded.push.exited).code).toBe(0);
    sessionId = await waitFor("the ended session", async () => (await api("GET", `/stream/${stream.id}/sessions`)).body.find((x: { isActive: boolean }) => !x.isActive)?.id, 15_000);
    const startTime = (await recorded.firstSegmentStart) + 2 * GOP_SECONDS * 1000;
    const created = await sdk.stream.createClip({ playbackId: stream.playbackId, sessionId, startTime, endTime: startTime + 4000 });
    const id = created.data!.asset.id;
    const ready = await waitFor("the recorded clip ready", async () => {
      const got = (await sdk.asset.get(id)).asset!;
      if (got.status!.phase === "failed") throw new Error(`clip failed: ${got.status!.errorMessage}`);
      return got.status!.phase === "ready" ? got : undefined;
    }, 30_000, 250);
    const mp4 = await probe(ready.downloadUrl!);
    // On segment bounds (the live window's dates anchor the recording's): 4 s, give or take a frame.
    expect(mp4.duration).toBeGreaterThan(4 - 0.1);
    expect(mp4.duration).toBeLessThan(4 + 0.1);
    expect((await sdk.session.getClips(sessionId)).data!.map((a) => a.id)).toEqual([id]);

    const deleted = await sdk.asset.delete(id);
    expect(deleted.statusCode).toBe(204);
    await expect(sdk.asset.get(id)).rejects.toMatchObject({ statusCode: 404 });
    expect((await fetch(ready.downloadUrl!)).status).toBe(404);
    expect((await api("GET", `/playback/${ready.playbackId}`)).status).toBe(404);
  });

  it("a clip whose media is gone is tried again, then failed with the reason and asset.failed; no work files stay", async () => {
    await waitFor("the recording finalized", async () => (await api("GET", `/session/${sessionId}`)).body.recordingStatus === "ready", 30_000);
    // The recording's playlist stays (the request is checked against it), its segments go.
    const folder = path.join(fx.t.dataDir, "recordings", sessionId, "0");
    for (const f of fs.readdirSync(folder).filter((f) => f.endsWith(".m4s"))) fs.rmSync(path.join(folder, f));
    const startTime = (await recorded.firstSegmentStart) + 2000;
    const requestedAt = Date.now();
    const created = await api("POST", "/clip", { playbackId: stream.playbackId, sessionId, startTime, endTime: startTime + 4000 });
    expect(created.status).toBe(200);
    const id = created.body.asset.id;
    const failed = await waitFor("the asset failed", async () => {
      const got = (await api("GET", `/asset/${id}`)).body;
      return got.status.phase === "failed" ? got : undefined;
    }, 30_000, 250);
    // Three attempts, 1 s and 2 s apart: one attempt alone fails within milliseconds.
    expect(Date.now() - requestedAt).toBeGreaterThanOrEqual(3000);
    expect(failed.status.errorMessage).toMatch(/^segment \S+\.m4s left the recording before it was read$/);
    expect(failed).not.toHaveProperty("downloadUrl");
    const delivered = await waitFor("asset.failed delivered", () => received().find((e) => e.event === "asset.failed" && (e.payload as { assetId?: string }).assetId === id), 10_000);
    expect(delivered.payload).toMatchObject({ sessionId, error: failed.status.errorMessage, asset: { id, status: { phase: "failed", errorMessage: failed.status.errorMessage } } });
    expect(fs.readdirSync(path.join(fx.t.dataDir, "assets")).filter((f) => f.startsWith(id))).toEqual([]);
  });
});
