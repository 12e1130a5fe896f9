import { Livepeer } from "livepeer";
import { BreakdownBy } from "livepeer/models/operations";
import { WEBRTC_VIEWER_PREFIX } from "../../src/playback/viewers";
import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { apiClient, startTestServer, type TestServer } from "../helpers/server";

// Concurrent viewers through the official SDK (metrics.getRealtimeViewership): the node's
// ViewerCounter, fed as the HLS routes feed it, written to viewer_counts every heartbeat and
// summed by GET /data/views/now. A short viewer window (2 s) and heartbeat (1 s) keep it quick.

let t: TestServer;
let sdk: Livepeer;
let bobSdk: Livepeer;
let push: Push | undefined;

beforeAll(async () => {
  t = await startTestServer({ VIEWER_WINDOW_SECONDS: "2", NODE_HEARTBEAT_SECONDS: "1" });
  sdk = new Livepeer({ apiKey: t.key, serverURL: t.apiUrl });
  bobSdk = new Livepeer({ apiKey: await t.keyFor("bob"), serverURL: t.apiUrl });
});
afterAll(async () => {
  push?.child.kill("SIGKILL");
  await t.stop();
});

const viewCount = async (playbackId: string) => (await sdk.metrics.getRealtimeViewership(playbackId)).data?.[0]?.viewCount;

describe("realtime viewership", () => {
  it("3 viewers of a live stream show within a heartbeat, in the metrics too, and leave after the window", async () => {
    const api = apiClient(t.apiUrl, t.key);
    const stream = (await api("POST", "/stream", { name: "watched", profiles: [] })).body;
    const other = (await api("POST", "/stream", { name: "not live", profiles: [] })).body;
    push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${stream.streamKey}`, { seconds: 30 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${stream.id}`)).body.isActive);

    expect(await sdk.metrics.getRealtimeViewership(stream.playbackId)).toMatchObject({ statusCode: 200, data: [{ playbackId: stream.playbackId, viewCount: 0, errorRate: 0 }] });

    // One of them watches over WebRTC (WHEP viewers are told to the counter under this prefix).
    for (const viewer of ["v1", "v2", `${WEBRTC_VIEWER_PREFIX}v3`]) t.server.viewers.seen(stream.playbackId, viewer);
    // Counted only on the node that packages the stream: a stream not live here is not written.
    t.server.viewers.seen(other.playbackId, "v1");
    await waitFor("3 viewers", async () => (await viewCount(stream.playbackId)) === 3, 5_000);

    const byPlaybackId = await sdk.metrics.getRealtimeViewership(undefined, undefined, [BreakdownBy.PlaybackId]);
    expect(byPlaybackId.data).toEqual([{ playbackId: stream.playbackId, viewCount: 3, errorRate: 0 }]);
    expect((await sdk.metrics.getRealtimeViewership()).data).toEqual([{ viewCount: 3, errorRate: 0 }]);
    expect(await viewCount(other.playbackId)).toBe(0);

    const scraped = (await t.server.metrics.scrape()).body;
    expect(scraped).toContain(`onair_viewers{playback_id="${stream.playbackId}"} 3`);
    expect(scraped).toContain(`onair_viewers_webrtc{playback_id="${stream.playbackId}"} 1`);
    expect(scraped).not.toContain(`playback_id="${other.playbackId}"`);

    // Another user's playback id filters to nothing, as an unknown one does; their total is 0.
    expect((await bobSdk.metrics.getRealtimeViewership(stream.playbackId)).data).toEqual([]);
    expect((await bobSdk.metrics.getRealtimeViewership("no-such-playback")).data).toEqual([]);
    expect((await bobSdk.metrics.getRealtimeViewership()).data).toEqual([{ viewCount: 0, errorRate: 0 }]);

    // No more playlist requests: gone once the window (2 s) and a heartbeat have passed.
    await waitFor("0 viewers", async () => (await viewCount(stream.playbackId)) === 0, 8_000);
    // The live stream keeps its series, at 0.
    expect((await t.server.metrics.scrape()).body).toContain(`onair_viewers{playback_id="${stream.playbackId}"} 0`);
  }, 40_000);

  it("refuses creatorId and unknown breakdowns with a 422", async () => {
    await expect(sdk.metrics.getRealtimeViewership(undefined, "creator-1")).rejects.toMatchObject({ statusCode: 422 });
    const api = apiClient(t.apiUrl, t.key);
    const bad = await api("GET", "/data/views/now?breakdownBy[]=planet");
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0]).toMatch(/breakdownBy\[\].*must be one of playbackId, device, browser, country/);
    expect((await api("GET", "/data/views/now?breakdownBy=playbackId")).body).toEqual([]);
  });

  it("rows carry webrtcViewCount beside Livepeer's fields, which the SDK still parses", async () => {
    const api = apiClient(t.apiUrl, t.key);
    const stream = (await api("POST", "/stream", { name: "watched two ways", profiles: [] })).body;
    const rtmp = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${stream.streamKey}`, { seconds: 30 });
    try {
      await waitFor("isActive", async () => (await api("GET", `/stream/${stream.id}`)).body.isActive);
      expect((await api("GET", `/data/views/now?playbackId=${stream.playbackId}`)).body).toEqual([{ playbackId: stream.playbackId, viewCount: 0, webrtcViewCount: 0, errorRate: 0 }]);

      // As WHEP playback tells its viewers, and as the HLS routes tell theirs.
      for (const viewer of [`${WEBRTC_VIEWER_PREFIX}w1`, `${WEBRTC_VIEWER_PREFIX}w2`, "hls1"]) t.server.viewers.seen(stream.playbackId, viewer);
      await waitFor("3 viewers", async () => (await viewCount(stream.playbackId)) === 3, 5_000);
      const row = { playbackId: stream.playbackId, viewCount: 3, webrtcViewCount: 2, errorRate: 0 };
      expect((await api("GET", `/data/views/now?playbackId=${stream.playbackId}`)).body).toEqual([row]);
      expect((await api("GET", "/data/views/now?breakdownBy[]=playbackId")).body).toEqual([row]);
      expect((await api("GET", "/data/views/now")).body).toEqual([{ viewCount: 3, webrtcViewCount: 2, errorRate: 0 }]);
      // The SDK knows Livepeer's fields only: it parses the row and leaves onair's out.
      expect(await sdk.metrics.getRealtimeViewership(stream.playbackId)).toMatchObject({ statusCode: 200, data: [{ playbackId: stream.playbackId, viewCount: 3, errorRate: 0 }] });
      const doc = (await api("GET", "/openapi.json")).body;
      expect(doc.components.schemas.RealtimeViewershipMetric.required).toEqual(expect.arrayContaining(["viewCount", "webrtcViewCount", "errorRate"]));
    } finally {
      rtmp.child.kill("SIGKILL");
    }
  }, 40_000);
});
