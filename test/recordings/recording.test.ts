import { probe, pushTestStream, waitFor } from "../helpers/media";
import { useWatchedServer } from "../helpers/watched";

const fx = useWatchedServer({ HLS_SEGMENT_SECONDS: "1" });
const { api, received: bodies, eventsOf } = fx;

describe("recordings", () => {
  it("a recorded push becomes an HLS VOD and an MP4 of its length, with started, waiting, ready in order", async () => {
    const s = (await api("POST", "/stream", { name: "recorded", record: true, profiles: [{ name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 }, { name: "90p", bitrate: 100_000, fps: 15, width: 160, height: 90 }] })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 8 });
    expect((await push.exited).code).toBe(0);
    const ready = await waitFor("recording.ready", () => bodies().find((e) => e.event === "recording.ready" && e.stream.id === s.id), 30_000);
    expect(eventsOf(s.id).filter((e) => e.startsWith("recording."))).toEqual(["recording.started", "recording.waiting", "recording.ready"]);
    expect(eventsOf(s.id)).toEqual(["stream.started", "recording.started", "stream.idle", "recording.waiting", "recording.ready"]);

    const [session] = (await api("GET", `/stream/${s.id}/sessions?record=1`)).body;
    expect(session).toMatchObject({ record: true, recordingStatus: "ready" });
    expect(ready.payload).toMatchObject({ sessionId: session.id, recordingUrl: session.recordingUrl, mp4Url: session.mp4Url, session: { id: session.id, recordingStatus: "ready" } });
    expect(session.mp4URL).toBe(session.mp4Url);
    // recording.ready carries the signed URLs, as the API does.
    expect(ready.payload.mp4Url).toMatch(/\/output\.mp4\?sig=[\w-]{43}$/);

    for (const url of [session.recordingUrl, session.mp4Url]) {
      const probed = await probe(url);
      expect(probed.duration).toBeGreaterThan(7);
      expect(probed.duration).toBeLessThan(9);
      expect([...new Set(probed.streams.map((x) => x.codec_type))].sort()).toEqual(["audio", "video"]);
    }
    const mp4 = await probe(session.mp4Url);
    expect(mp4.streams.find((x) => x.codec_type === "video")).toMatchObject({ width: 320, height: 180 });

    const playlist = await (await fetch(session.recordingUrl.replace("index.m3u8", "0/index.m3u8"))).text();
    expect(playlist).toContain("#EXT-X-PLAYLIST-TYPE:VOD");
    expect(playlist).toMatch(/#EXT-X-ENDLIST\s*$/);

    // Players seek in the MP4 with ranges.
    const range = await fetch(session.mp4Url, { headers: { range: "bytes=100-199" } });
    expect(range.status).toBe(206);
    expect(range.headers.get("content-type")).toBe("video/mp4");
    expect((await range.arrayBuffer()).byteLength).toBe(100);
  });

  it("an unrecorded session has no recording fields and raises no recording events", async () => {
    const s = (await api("POST", "/stream", { name: "not recorded" })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 3 });
    await push.exited;
    await waitFor("stream.idle", () => eventsOf(s.id).includes("stream.idle"), 10_000);
    const [session] = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(session).not.toHaveProperty("recordingStatus");
    expect(session).not.toHaveProperty("recordingUrl");
    expect(eventsOf(s.id).filter((e) => e.startsWith("recording."))).toEqual([]);
    expect((await api("GET", `/stream/${s.id}/sessions?record=1`)).body).toEqual([]);
    expect((await fetch(`http://127.0.0.1:${fx.t.server.port}/recordings/${session.id}/index.m3u8`)).status).toBe(404);
  });

  it("toggling record while live changes only the next session", async () => {
    const s = (await api("POST", "/stream", { name: "toggle" })).body;
    const first = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 3 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
    expect((await api("PATCH", `/stream/${s.id}/record`, { record: true })).status).toBe(204);
    await first.exited;
    await waitFor("idle", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive, 5000);

    const second = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 3 });
    await second.exited;
    await waitFor("recording.ready", () => eventsOf(s.id).includes("recording.ready"), 30_000);
    const sessions = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(sessions.map((x: { record: boolean }) => x.record)).toEqual([true, false]); // newest first
    expect(sessions[1]).not.toHaveProperty("recordingStatus");
    expect(sessions[0].recordingStatus).toBe("ready");
  });
});
