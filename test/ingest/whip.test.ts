import { probe, waitFor } from "../helpers/media";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { useTestServer } from "../helpers/server";
import { whipPublish, type WhipClient } from "../helpers/whipClient";

// WHIP (RFC 9725) with a real WebRTC peer: node-datachannel, the library OBS's WHIP output
// embeds, sending H.264 + Opus from ffmpeg's test sources. ICE stays on loopback on both sides.

const fx = useTestServer({ WEBRTC_BIND_ADDRESS: "127.0.0.1", WEBRTC_MEDIA_TIMEOUT_SECONDS: "3", HLS_SEGMENT_SECONDS: "1" });
const { api } = fx;
const origin = () => `http://127.0.0.1:${fx.t.server.port}`;
const PROFILES = [
  { name: "360p", bitrate: 800_000, fps: 30, width: 640, height: 360 },
  { name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 },
];
const clients: WhipClient[] = [];
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  await api("POST", "/webhook", { name: "r", url: receiver.url, events: ["stream.started", "stream.idle"] });
});
afterAll(() => receiver.close());
afterEach(async () => {
  for (const c of clients.splice(0)) c.vanish();
  await waitFor("no stream live", () => fx.t.server.sessions.runtimes().length === 0, 15_000);
});

async function publish(endpoint: string, bearer?: string): Promise<WhipClient> {
  const c = await whipPublish(endpoint, bearer ? { bearer } : {});
  clients.push(c);
  return c;
}

const idles = (streamId: string) => receiver.received.filter((r) => r.body.event === "stream.idle" && r.body.stream.id === streamId);

describe("WHIP ingest", () => {
  it("publishes H.264 + Opus into the ladder; DELETE ends it with stream.idle", async () => {
    const s = (await api("POST", "/stream", { name: "whip", profiles: PROFILES })).body;
    const c = await publish(`${origin()}/whip`, s.streamKey);
    expect(c.status).toBe(201);
    expect(c.resource).toMatch(new RegExp(`^${origin()}/whip/[A-Za-z0-9_-]{24}$`));
    expect(c.headers.get("content-type")).toBe("application/sdp");
    expect(c.headers.get("etag")).toMatch(/^".+"$/);
    // The answer chose the offered H.264 and Opus, candidates on loopback only.
    expect(c.body).toMatch(/a=rtpmap:96 H264\/90000/);
    expect(c.body).toMatch(/a=rtpmap:111 opus\/48000\/2/);
    const candidates = c.body.split(/\r?\n/).filter((l) => l.startsWith("a=candidate:"));
    expect(candidates.length).toBeGreaterThan(0);
    for (const line of candidates) expect(line.split(" ")[4]).toBe("127.0.0.1");

    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive, 20_000);
    const hls = (file: string) => `${origin()}/hls/${s.playbackId}/${file}`;
    for (const [i, p] of PROFILES.entries()) {
      const probed = await probe(hls(`${i}/index.m3u8`));
      expect(probed.streams.find((x) => x.codec_type === "video")).toMatchObject({ codec_name: "h264", width: p.width, height: p.height });
      expect(probed.streams.find((x) => x.codec_type === "audio")).toMatchObject({ codec_name: "aac" });
    }
    const sessions = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ protocol: "webrtc", isActive: true });
    // The resource tells the broadcast page how the stream is doing.
    const state = (await (await fetch(c.resource!)).json()) as { packets: number };
    expect(state).toMatchObject({ streamId: s.id, isActive: true });
    expect(state.packets).toBeGreaterThan(0);

    expect(await c.stop()).toBe(200);
    await waitFor("stream.idle", () => idles(s.id).length === 1, 10_000);
    expect((await api("GET", `/stream/${s.id}`)).body.isActive).toBe(false);
    expect((await fetch(c.resource!)).status).toBe(404);
    // The session's end follows the idle (the pipeline flushes first): the playlist ends soon after.
    await waitFor("ENDLIST", async () => /#EXT-X-ENDLIST\s*$/.test(await (await fetch(hls("0/index.m3u8"))).text()), 10_000);
    expect(fx.t.server.processes.size).toBe(0);
  });

  it("takes the stream key in the path too (Livepeer's /webrtc/<key>)", async () => {
    const s = (await api("POST", "/stream", { name: "path key", profiles: [PROFILES[1]] })).body;
    const c = await publish(`${origin()}/webrtc/${s.streamKey}`);
    expect(c.status).toBe(201);
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive, 20_000);
    expect(await c.stop()).toBe(200);
  });

  it("a publisher that vanishes without DELETE ends within the media timeout", async () => {
    const s = (await api("POST", "/stream", { name: "vanish", profiles: [PROFILES[1]] })).body;
    const c = await publish(`${origin()}/whip`, s.streamKey);
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive, 20_000);
    c.vanish();
    const gone = Date.now();
    await waitFor("stream.idle", () => idles(s.id).length === 1, 10_000);
    // WEBRTC_MEDIA_TIMEOUT_SECONDS=3, then the session's end.
    expect(Date.now() - gone).toBeLessThan(7_000);
    const session = await waitFor("the session closed", async () => {
      const [first] = (await api("GET", `/stream/${s.id}/sessions`)).body;
      return first?.isActive === false ? first : undefined;
    }, 5_000);
    expect(session).toMatchObject({ isActive: false, protocol: "webrtc" });
  });

  it("refuses a bad key (401), a suspended stream (403), a wrong content type (415), a bad offer (400), PATCH (405)", async () => {
    const bad = await publish(`${origin()}/whip`, "abcd-efgh-ijkl-mnop");
    expect(bad.status).toBe(401);
    expect(JSON.parse(bad.body).errors[0]).toMatch(/unknown stream key/);
    const none = await fetch(`${origin()}/whip`, { method: "POST", headers: { "content-type": "application/sdp" }, body: "v=0\r\n" });
    expect(none.status).toBe(401);
    // The key is checked before the body is read or parsed: a bad key gets 401 whatever it sends.
    for (const [type, body] of [["application/sdp", "hello"], ["application/sdp", "v=0\r\nm=video 9 X 1\r\n"], ["text/plain", "v=0"]] as const) {
      const badKeyBadBody = await fetch(`${origin()}/whip`, { method: "POST", headers: { authorization: "Bearer abcd-efgh-ijkl-mnop", "content-type": type }, body });
      expect(badKeyBadBody.status).toBe(401);
      expect(((await badKeyBadBody.json()) as { errors: string[] }).errors[0]).toMatch(/unknown stream key/);
    }

    const s = (await api("POST", "/stream", { name: "suspended" })).body;
    await api("PATCH", `/stream/${s.id}`, { suspended: true });
    const suspended = await publish(`${origin()}/webrtc/${s.streamKey}`);
    expect(suspended.status).toBe(403);
    expect(JSON.parse(suspended.body).errors[0]).toMatch(/suspended/);

    const ok = (await api("POST", "/stream", { name: "fine" })).body;
    const wrongType = await fetch(`${origin()}/whip`, { method: "POST", headers: { authorization: `Bearer ${ok.streamKey}`, "content-type": "text/plain" }, body: "v=0" });
    expect(wrongType.status).toBe(415);
    expect(((await wrongType.json()) as { errors: string[] }).errors[0]).toMatch(/application\/sdp/);
    const vp8 = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=sendonly\r\na=rtpmap:96 VP8/90000\r\n";
    const badOffer = await fetch(`${origin()}/whip`, { method: "POST", headers: { authorization: `Bearer ${ok.streamKey}`, "content-type": "application/sdp" }, body: vp8 });
    expect(badOffer.status).toBe(400);
    expect(((await badOffer.json()) as { errors: string[] }).errors[0]).toMatch(/H\.264/);
    const garbage = await fetch(`${origin()}/whip`, { method: "POST", headers: { authorization: `Bearer ${ok.streamKey}`, "content-type": "application/sdp" }, body: "hello" });
    expect(garbage.status).toBe(400);
    const patch = await fetch(`${origin()}/whip/whatever`, { method: "PATCH", headers: { "content-type": "application/trickle-ice-sdpfrag" }, body: "a=x" });
    expect(patch.status).toBe(405);
    expect(patch.headers.get("allow")).toContain("DELETE");
    expect((await fetch(`${origin()}/whip/unknown`, { method: "DELETE" })).status).toBe(404);
    const options = await fetch(`${origin()}/whip`, { method: "OPTIONS" });
    expect(options.status).toBe(204);
    expect(options.headers.get("accept-post")).toBe("application/sdp");
    // Nothing was created or started by any of these.
    for (const id of [s.id, ok.id]) expect((await api("GET", `/stream/${id}/sessions`)).body).toEqual([]);
    expect(fx.t.server.processes.size).toBe(0);
  });
});
