import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Livepeer } from "livepeer";
import S3rver from "s3rver";
import { buildLiveArgs, renditionLadder } from "../../src/media";
import { FFMPEG, probe, pushTestStream, waitFor } from "../helpers/media";
import { apiClient, startTestServer, tempDir, type Api, type TestServer } from "../helpers/server";

// Thumbnails from real ffmpeg over real RTMP: the live one from the pipeline's decode (copy and
// ladder), served at /hls/<playbackId>/thumbnail.jpg, listed in playback info as the SDK reads
// it, kept after the session; a recording's made by finalize beside its MP4.

let t: TestServer;
let api: Api;
let sdk: Livepeer;
let base: string;

beforeAll(async () => {
  t = await startTestServer({ HLS_SEGMENT_SECONDS: "1" });
  api = apiClient(t.apiUrl, t.key);
  sdk = new Livepeer({ apiKey: t.key, serverURL: t.apiUrl });
  base = `http://127.0.0.1:${t.server.port}`;
});
afterAll(() => t.stop());

/** A whole JPEG: SOI at the start, EOI at the end (a half-written file has no EOI). */
function isWholeJpeg(b: Buffer): boolean {
  return b.length > 4 && b[0] === 0xff && b[1] === 0xd8 && b[b.length - 2] === 0xff && b[b.length - 1] === 0xd9;
}

async function thumbnail(url: string): Promise<{ status: number; type: string | null; cache: string | null; body: Buffer }> {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get("content-type"), cache: res.headers.get("cache-control"), body: Buffer.from(await res.arrayBuffer()) };
}

const getStream = async (id: string) => (await api("GET", `/stream/${id}`)).body;

describe("thumbnails", () => {
  it("a copied stream: listed for the SDK, 404 before the first, a whole 640-wide JPEG while live and after, and the recording's own", async () => {
    const s = (await api("POST", "/stream", { name: "thumbs", record: true })).body;
    const url = `${base}/hls/${s.playbackId}/thumbnail.jpg`;

    const info = (await sdk.playback.get(s.playbackId)).playbackInfo!;
    expect(info.meta.source).toContainEqual({ hrn: "Thumbnail (JPEG)", type: "image/jpeg", url: `${t.server.publicUrl}/hls/${s.playbackId}/thumbnail.jpg` });
    expect((await fetch(url)).status).toBe(404);

    // 1280x720 in, copied: the thumbnail alone is decoded (keyframes) and scaled to 640 wide.
    const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 4, size: "1280x720" });
    await waitFor("isActive", async () => (await getStream(s.id)).isActive);
    const live = await waitFor("a thumbnail while live", async () => {
      const got = await thumbnail(url);
      return got.status === 200 ? got : undefined;
    }, 10_000);
    expect((await getStream(s.id)).isActive).toBe(true);
    expect(live.type).toBe("image/jpeg");
    expect(live.cache).toBe("public, max-age=5");
    expect(isWholeJpeg(live.body)).toBe(true);
    expect((await probe(url)).streams).toEqual([expect.objectContaining({ codec_type: "video", codec_name: "mjpeg", width: 640, height: 360 })]);

    // The player page shows it as the poster.
    const page = await (await fetch(`${base}/play/${s.playbackId}`)).text();
    expect(page).toContain(`poster="/hls/${s.playbackId}/thumbnail.jpg"`);

    expect((await push.exited).code).toBe(0);
    await waitFor("isActive false", async () => !(await getStream(s.id)).isActive, 5000);
    // The session's last picture stays.
    const after = await thumbnail(url);
    expect(after.status).toBe(200);
    expect(isWholeJpeg(after.body)).toBe(true);

    // The recording's, beside its MP4 and signed like it.
    const session = await waitFor("recording ready", async () => {
      const [x] = (await api("GET", `/stream/${s.id}/sessions?record=1`)).body;
      return x?.recordingStatus === "ready" ? x : undefined;
    }, 30_000);
    const recorded = (session.recordingUrl as string).replace("/index.m3u8?", "/thumbnail.jpg?");
    const still = await thumbnail(recorded);
    expect(still.status).toBe(200);
    expect(still.type).toBe("image/jpeg");
    expect(isWholeJpeg(still.body)).toBe(true);
    expect((await probe(recorded)).streams).toEqual([expect.objectContaining({ codec_name: "mjpeg", width: 640, height: 360 })]);
    // Without the signature, nothing.
    expect((await fetch(recorded.replace(/\?sig=.*$/, ""))).status).toBe(404);
    const vodPage = await (await fetch(`${base}/play/${s.playbackId}?session=${session.id}`)).text();
    expect(vodPage).toContain(`poster="/recordings/${session.id}/thumbnail.jpg?sig=`);
  });

  it("a ladder: the thumbnail is another branch of the one decode, at the source's aspect, no wider than 640", async () => {
    const profiles = [{ name: "90p", bitrate: 100_000, fps: 15, width: 160, height: 90 }];
    const s = (await api("POST", "/stream", { name: "ladder thumbs", profiles })).body;
    const url = `${base}/hls/${s.playbackId}/thumbnail.jpg`;
    // A source narrower than 640 is not enlarged.
    const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 4, size: "480x270" });
    await waitFor("isActive", async () => (await getStream(s.id)).isActive);
    await waitFor("a thumbnail", async () => (await fetch(url)).status === 200, 10_000);
    // Written while live, by the session's one ffmpeg: no second decode was started for it.
    expect((await getStream(s.id)).isActive).toBe(true);
    expect(t.server.processes.size).toBe(1);
    expect((await probe(url)).streams).toEqual([expect.objectContaining({ codec_name: "mjpeg", width: 480, height: 270 })]);
    expect((await push.exited).code).toBe(0);
  });

  it("passthrough's copy is byte for byte the same with the thumbnail's keyframe-only decode, B-frames and all", async () => {
    const dir = tempDir();
    const flv = path.join(dir, "in.flv");
    // x264's defaults: B-frames (the decoder's reorder delay), 1 s GOPs.
    const made = spawnSync(FFMPEG, ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "3", "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-pix_fmt", "yuv420p", "-f", "flv", flv]);
    expect(made.status).toBe(0);
    const copy = async (thumbnailFile?: string) => {
      const args = buildLiveArgs({ inputFile: flv, renditions: renditionLadder([], 1), segmentSeconds: 1, fragmentMicros: 200_000, audioBitrate: 128_000, thumbnailFile });
      const child = spawn(FFMPEG, args, { stdio: ["ignore", "ignore", "ignore", "pipe"] });
      const chunks: Buffer[] = [];
      child.stdio[3]!.on("data", (c: Buffer) => chunks.push(c));
      const code = await new Promise((resolve) => child.once("close", resolve));
      expect(code).toBe(0);
      return Buffer.concat(chunks);
    };
    const jpeg = path.join(dir, "thumbnail.jpg");
    const [without, withThumbnail] = [await copy(), await copy(jpeg)];
    expect(without.length).toBeGreaterThan(10_000);
    expect(withThumbnail.equals(without)).toBe(true);
    expect(isWholeJpeg(fs.readFileSync(jpeg))).toBe(true);
    expect(fs.existsSync(`${jpeg}.tmp`)).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a malformed or unknown playback id is a 404", async () => {
    expect((await fetch(`${base}/hls/NOT-AN-ID/thumbnail.jpg`)).status).toBe(404);
    expect((await fetch(`${base}/hls/abcdefghijklmnop/thumbnail.jpg`)).status).toBe(404);
  });
});

describe("a recording's thumbnail with object storage", () => {
  it("goes to the bucket with the MP4 and is served from there", async () => {
    const work = tempDir();
    const s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: path.join(work, "s3"), configureBuckets: [{ name: "thumbs", configs: [] }] });
    const { port } = await s3.run();
    const o = await startTestServer({ HLS_SEGMENT_SECONDS: "1", S3_ENDPOINT: `http://127.0.0.1:${port}`, S3_BUCKET: "thumbs", S3_ACCESS_KEY_ID: "S3RVER", S3_SECRET_ACCESS_KEY: "S3RVER" });
    try {
      const oapi = apiClient(o.apiUrl, o.key);
      const s = (await oapi("POST", "/stream", { name: "bucket thumbs", record: true })).body;
      const push = pushTestStream(`rtmp://127.0.0.1:${o.server.rtmpPort}/live/${s.streamKey}`, { seconds: 3 });
      expect((await push.exited).code).toBe(0);
      const session = await waitFor("recording ready", async () => {
        const [x] = (await oapi("GET", `/stream/${s.id}/sessions?record=1`)).body;
        return x?.recordingStatus === "ready" ? x : undefined;
      }, 30_000);
      // Not from this node's disk: from the bucket.
      fs.rmSync(path.join(o.dataDir, "recordings", session.id, "thumbnail.jpg"));
      const url = (session.recordingUrl as string).replace("/index.m3u8?", "/thumbnail.jpg?");
      const got = await thumbnail(url);
      expect(got.status).toBe(200);
      expect(got.type).toBe("image/jpeg");
      expect(isWholeJpeg(got.body)).toBe(true);
      expect((await probe(url)).streams).toEqual([expect.objectContaining({ codec_name: "mjpeg", width: 320, height: 180 })]);
    } finally {
      await o.stop();
      await s3.close();
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
});
