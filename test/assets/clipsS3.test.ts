import fs from "node:fs";
import path from "node:path";
import S3rver from "s3rver";
import { probe, pushTestStream, waitFor } from "../helpers/media";
import { apiClient, startTestServer, tempDir } from "../helpers/server";

// With object storage, a clip's files go to the bucket under assets/<id>/ and are served from
// there (any node can serve them); deleting the asset deletes them there.

/** Every file s3rver keeps under `dir` whose key path contains `needle`. */
function bucketFiles(dir: string, needle: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full);
      else if (full.includes(needle)) out.push(full);
    }
  };
  walk(dir);
  return out;
}

it("a clip of a recording in the bucket: stored under assets/<id>/, served from there, deleted from there", async () => {
  const work = tempDir();
  const s3dir = path.join(work, "s3");
  const s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: s3dir, configureBuckets: [{ name: "clips", configs: [] }] });
  const { port } = await s3.run();
  const o = await startTestServer({ HLS_SEGMENT_SECONDS: "1", S3_ENDPOINT: `http://127.0.0.1:${port}`, S3_BUCKET: "clips", S3_ACCESS_KEY_ID: "S3RVER", S3_SECRET_ACCESS_KEY: "S3RVER" });
  try {
    const api = apiClient(o.apiUrl, o.key);
    const s = (await api("POST", "/stream", { name: "bucket clips", record: true, profiles: [] })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${o.server.rtmpPort}/live/${s.streamKey}`, { seconds: 5 });
    // The first segment's date, from the live playlist while it lists it.
    const first = await waitFor("the first segment", async () => {
      const media = await fetch(`http://127.0.0.1:${o.server.port}/hls/${s.playbackId}/0/index.m3u8`);
      const m = media.status === 200 ? /#EXT-X-PROGRAM-DATE-TIME:(\S+)/.exec(await media.text()) : null;
      return m ? Date.parse(m[1]!) : undefined;
    }, 20_000, 100);
    expect((await push.exited).code).toBe(0);
    const [session] = await waitFor("the session ended", async () => {
      const list = (await api("GET", `/stream/${s.id}/sessions`)).body;
      return list[0] && !list[0].isActive ? list : undefined;
    }, 15_000);

    const created = await api("POST", "/clip", { playbackId: s.playbackId, sessionId: session.id, startTime: first + 1000, endTime: first + 3000 });
    expect(created.status).toBe(200);
    const id = created.body.asset.id;
    const ready = await waitFor("the clip ready", async () => {
      const a = (await api("GET", `/asset/${id}`)).body;
      if (a.status.phase === "failed") throw new Error(a.status.errorMessage);
      return a.status.phase === "ready" ? a : undefined;
    }, 30_000, 200);

    // Not on this node's disk: in the bucket, and served from it.
    expect(fs.existsSync(path.join(o.dataDir, "assets", id))).toBe(false);
    expect(bucketFiles(s3dir, `assets/${id}/video.mp4`).length).toBeGreaterThan(0);
    expect(bucketFiles(s3dir, `assets/${id}/index.m3u8`).length).toBeGreaterThan(0);
    const mp4 = await probe(ready.downloadUrl);
    expect(mp4.duration).toBeGreaterThan(2 - 0.1);
    expect(mp4.duration).toBeLessThan(3 + 0.1);
    expect((await probe(ready.playbackUrl)).streams.map((x) => x.codec_name).sort()).toEqual(["aac", "h264"]);
    const range = await fetch(ready.downloadUrl, { headers: { range: "bytes=10-19" } });
    expect(range.status).toBe(206);
    expect((await range.arrayBuffer()).byteLength).toBe(10);
    // A Range past the end (a hostile or confused client): the whole file, never a 500.
    const past = await fetch(ready.downloadUrl, { headers: { range: "bytes=999999999-" } });
    expect(past.status).toBe(200);
    expect((await past.arrayBuffer()).byteLength).toBe(ready.size);

    expect((await api("DELETE", `/asset/${id}`)).status).toBe(204);
    expect(bucketFiles(s3dir, `assets/${id}/`)).toEqual([]);
    expect((await fetch(ready.downloadUrl)).status).toBe(404);
  } finally {
    await o.stop();
    await s3.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
});
