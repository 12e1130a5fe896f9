import { probe, pushTestStream, waitFor } from "../helpers/media";
import { apiClient, startTestServer, type Api, type TestServer } from "../helpers/server";

// Real ffmpeg pushing real RTMP into a real server; HLS read back over HTTP. Short 1 s
// segments keep the suite quick; the default 2 s is covered by the benchmark and by hand.

let t: TestServer;
let api: Api;
let rtmp: string;
let hls: (playbackId: string, file?: string) => string;

beforeAll(async () => {
  t = await startTestServer({ HLS_SEGMENT_SECONDS: "1", HLS_LIST_SIZE: "30" });
  api = apiClient(t.apiUrl, t.key);
  rtmp = `rtmp://127.0.0.1:${t.server.rtmpPort}/live`;
  hls = (playbackId, file = "index.m3u8") => `http://127.0.0.1:${t.server.port}/hls/${playbackId}/${file}`;
});
afterAll(() => t.stop());

const PROFILES = [
  { name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 },
  { name: "90p", bitrate: 120_000, fps: 15, width: 160, height: 90 },
];

const getStream = async (id: string) => (await api("GET", `/stream/${id}`)).body;

describe("RTMP ingest", () => {
  it("refuses an unknown key at once and creates nothing", async () => {
    const push = pushTestStream(`${rtmp}/abcd-efgh-ijkl-mnop`, { seconds: 10 });
    const end = await push.exited;
    expect(end.code).not.toBe(0);
    expect(end.afterMs).toBeLessThan(5000);
    const wrongApp = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/other/abcd`, { seconds: 10 });
    expect((await wrongApp.exited).afterMs).toBeLessThan(5000);
    expect((await api("GET", "/session")).body).toEqual([]);
    expect(t.server.processes.size).toBe(0);
  });

  it("transcodes into the profiles; isActive only once HLS plays; ends cleanly", async () => {
    const s = (await api("POST", "/stream", { name: "ladder", profiles: PROFILES })).body;
    const push = pushTestStream(`${rtmp}/${s.streamKey}`, { seconds: 6 });

    // Until the stream is active its playback URL does not work; once it is, everything plays.
    let inactiveButPlayable = false;
    await waitFor("isActive", async () => {
      const active = (await getStream(s.id)).isActive as boolean;
      if (!active && (await fetch(hls(s.playbackId))).status === 200 && !(await getStream(s.id)).isActive) inactiveButPlayable = true;
      return active;
    });
    expect(inactiveButPlayable).toBe(false);
    const master = await fetch(hls(s.playbackId));
    expect(master.status).toBe(200);
    const text = await master.text();
    const variants = text.split("\n").filter((l) => l.startsWith("#EXT-X-STREAM-INF:"));
    expect(variants).toHaveLength(PROFILES.length);
    for (const p of PROFILES) {
      const line = variants.find((v) => v.includes(`NAME="${p.name}"`))!;
      expect(line).toMatch(/BANDWIDTH=\d+/);
      expect(line).toContain(`RESOLUTION=${p.width}x${p.height}`);
      expect(line).toMatch(/CODECS="avc1\.[0-9a-f]{6},mp4a\.40\.2"/);
    }
    for (const i of [0, 1]) {
      const playlist = await (await fetch(hls(s.playbackId, `${i}/index.m3u8`))).text();
      const first = playlist.split("\n").find((l) => l.endsWith(".m4s") && !l.startsWith("#"))!;
      expect((await fetch(hls(s.playbackId, `${i}/${first}`))).status).toBe(200);
    }
    expect((await api("GET", `/playback/${s.playbackId}`)).body.meta.live).toBe(1);

    // Each rendition decodes at its profile's size, with audio.
    for (const [i, p] of PROFILES.entries()) {
      const probed = await probe(hls(s.playbackId, `${i}/index.m3u8`));
      expect(probed.streams.find((x) => x.codec_type === "video")).toMatchObject({ codec_name: "h264", width: p.width, height: p.height });
      expect(probed.streams.find((x) => x.codec_type === "audio")).toMatchObject({ codec_name: "aac" });
    }

    const end = await push.exited;
    expect(end.code).toBe(0);
    const leftAt = Date.now();
    await waitFor("isActive false", async () => !(await getStream(s.id)).isActive, 3000, 50);
    expect(Date.now() - leftAt).toBeLessThan(3000);

    // The session closes once its pipeline has finished the last segments (no reconnect window here).
    const sessions = await waitFor("the session closed", async () => {
      const list = (await api("GET", `/stream/${s.id}/sessions`)).body;
      return list[0]?.isActive === false ? list : undefined;
    }, 5000);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ parentId: s.id, isActive: false, profiles: PROFILES });
    expect(sessions[0].sourceSegmentsDuration).toBeGreaterThan(4.5);
    expect(sessions[0].sourceSegmentsDuration).toBeLessThan(7.5);
    expect(sessions[0].transcodedSegments).toBe(sessions[0].sourceSegments * 2);
    const parent = await getStream(s.id);
    expect(parent.sourceSegmentsDuration).toBe(sessions[0].sourceSegmentsDuration);
    expect(parent.lastSeen).toBeGreaterThan(s.createdAt);
    const child = ((await api("GET", "/stream")).body as { id: string; parentId?: string }[]).find((x) => x.id === sessions[0].id);
    expect(child).toMatchObject({ parentId: s.id });

    // The playlists end: the URL no longer plays as live.
    for (const i of [0, 1]) expect(await (await fetch(hls(s.playbackId, `${i}/index.m3u8`))).text()).toMatch(/#EXT-X-ENDLIST\s*$/);
    expect((await api("GET", `/playback/${s.playbackId}`)).body.meta.live).toBe(0);
    await waitFor("the pipeline's ffmpeg to exit", () => t.server.processes.size === 0, 5000);
  });

  it("goes idle within 3 s of the publisher leaving", async () => {
    const s = (await api("POST", "/stream", { name: "idle timing" })).body;
    const push = pushTestStream(`${rtmp}/${s.streamKey}`, { seconds: 30 });
    await waitFor("isActive", async () => (await getStream(s.id)).isActive);
    push.child.kill("SIGKILL");
    const killedAt = Date.now();
    await waitFor("isActive false", async () => !(await getStream(s.id)).isActive, 3000, 50);
    expect(Date.now() - killedAt).toBeLessThan(3000);
    // Without a reconnect window the session closes too, once its ffmpeg has finished the
    // playlists (the stream goes idle first: it does not wait for that).
    await waitFor("the session to close", async () => (await api("GET", `/stream/${s.id}/sessions`)).body[0]?.isActive === false, 5000, 50);
    expect(Date.now() - killedAt).toBeLessThan(6000);
  });

  it("terminate ends the live session; the publisher may come back", async () => {
    const s = (await api("POST", "/stream", { name: "terminate me" })).body;
    const push = pushTestStream(`${rtmp}/${s.streamKey}`, { seconds: 30 });
    await waitFor("isActive", async () => (await getStream(s.id)).isActive);
    expect((await api("DELETE", `/stream/${s.id}/terminate`)).status).toBe(204);
    expect((await push.exited).code).not.toBe(0);
    await waitFor("isActive false", async () => !(await getStream(s.id)).isActive, 3000);
    // Long enough to go live on a busy machine: a push that ends before its first segment never does.
    const again = pushTestStream(`${rtmp}/${s.streamKey}`, { seconds: 6 });
    await waitFor("isActive again", async () => (await getStream(s.id)).isActive);
    expect((await again.exited).code).toBe(0);
    expect((await api("DELETE", `/stream/${s.id}/terminate`)).status).toBe(204);
  });

  it("passthrough keeps the source as it is", async () => {
    const s = (await api("POST", "/stream", { name: "passthrough" })).body;
    const push = pushTestStream(`${rtmp}/${s.streamKey}`, { seconds: 8, size: "426x240" });
    await waitFor("isActive", async () => (await getStream(s.id)).isActive);
    const text = await (await fetch(hls(s.playbackId))).text();
    const variants = text.split("\n").filter((l) => l.startsWith("#EXT-X-STREAM-INF:"));
    expect(variants).toHaveLength(1);
    expect(variants[0]).toContain("RESOLUTION=426x240");
    expect(variants[0]).toMatch(/CODECS="avc1\.[0-9a-f]{6},mp4a\.40\.2"/);
    expect((await probe(hls(s.playbackId, "0/index.m3u8"))).streams.find((x) => x.codec_type === "video")).toMatchObject({ width: 426, height: 240 });
    await push.exited;
    await waitFor("isActive false", async () => !(await getStream(s.id)).isActive, 5000);
    const [session] = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(session.transcodedSegments).toBe(0);
    expect(session.sourceSegments).toBeGreaterThan(0);
  });

  it("suspend disconnects the live publisher and refuses the next one until unsuspended", async () => {
    const s = (await api("POST", "/stream", { name: "suspend me" })).body;
    const push = pushTestStream(`${rtmp}/${s.streamKey}`, { seconds: 30 });
    await waitFor("isActive", async () => (await getStream(s.id)).isActive);
    const suspendedAt = Date.now();
    expect((await api("PATCH", `/stream/${s.id}`, { suspended: true })).status).toBe(204);
    const end = await push.exited;
    expect(Date.now() - suspendedAt).toBeLessThan(3000);
    expect(end.code).not.toBe(0);
    await waitFor("isActive false", async () => !(await getStream(s.id)).isActive, 3000);

    const refused = pushTestStream(`${rtmp}/${s.streamKey}`, { seconds: 10 });
    expect((await refused.exited).afterMs).toBeLessThan(5000);
    expect((await api("GET", `/stream/${s.id}/sessions`)).body).toHaveLength(1);

    expect((await api("PATCH", `/stream/${s.id}`, { suspended: false })).status).toBe(204);
    const again = pushTestStream(`${rtmp}/${s.streamKey}`, { seconds: 30 });
    await waitFor("isActive again", async () => (await getStream(s.id)).isActive);
    expect((await api("DELETE", `/stream/${s.id}`)).status).toBe(204);
    expect((await again.exited).code).not.toBe(0);
    await waitFor("the pipeline's ffmpeg to exit", () => t.server.processes.size === 0, 5000);
    expect((await api("GET", `/stream/${s.id}`)).status).toBe(404);
    expect((await fetch(hls(s.playbackId))).status).toBe(404);
  });
});
