import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { signJwt } from "../helpers/jwt";
import { useTestServer, type Api } from "../helpers/server";
import { decodeH264, decodeOpus, whepPlay, type DecodedFrame, type WhepPlayOptions, type WhepState, type WhepViewer } from "../helpers/whepClient";

// WHEP (draft-ietf-wish-whep) playback with a real WebRTC viewer: node-datachannel receiving
// the H.264 of a stream's encoded ladder and its Opus, from a real RTMP push of testsrc2 + sine;
// what it receives is depacketized and decoded by ffmpeg. ICE stays on loopback on both sides.

const PROFILES = [
  { name: "360p", bitrate: 800_000, fps: 30, width: 640, height: 360 },
  { name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 },
  { name: "90p", bitrate: 100_000, fps: 30, width: 160, height: 90 },
];
const LOWEST = PROFILES.length - 1;
const PUSH_SECONDS = 600;
const SERVER_ENV = { WEBRTC_BIND_ADDRESS: "127.0.0.1", HLS_SEGMENT_SECONDS: "1" };

const pushes: Push[] = [];
const viewers: WhepViewer[] = [];

afterEach(async () => {
  for (const v of viewers.splice(0)) await v.stop();
});
afterAll(() => {
  for (const p of pushes) p.child.kill("SIGKILL");
});

/** A stream live over RTMP (testsrc2 640x360 + sine), pushed for the rest of the file. */
async function liveStream(api: Api, rtmpPort: number, body: Record<string, unknown>): Promise<{ id: string; playbackId: string }> {
  const res = await api("POST", "/stream", body);
  expect(res.status).toBe(201);
  const stream = res.body as { id: string; playbackId: string; streamKey: string };
  const push = pushTestStream(`rtmp://127.0.0.1:${rtmpPort}/live/${stream.streamKey}`, { seconds: PUSH_SECONDS, size: "640x360" });
  pushes.push(push);
  let exited: string | undefined;
  void push.exited.then((e) => (exited = `the push exited (${e.code ?? e.signal}) after ${e.afterMs} ms: ${e.stderr}`));
  try {
    await waitFor("the stream to be live", async () => exited !== undefined || (await api("GET", `/stream/${stream.id}`)).body.isActive, 30_000);
  } catch (err) {
    const sessions = (await api("GET", `/stream/${stream.id}/sessions`)).body;
    throw new Error(`${(err as Error).message}; the push ${exited ?? "still runs"}; sessions: ${JSON.stringify(sessions)}`);
  }
  if (exited) throw new Error(`the stream never went live: ${exited}`);
  return stream;
}

async function play(url: string, opts: WhepPlayOptions = {}): Promise<WhepViewer> {
  const v = await whepPlay(url, opts);
  if (v.status === 201) viewers.push(v);
  return v;
}

async function stop(v: WhepViewer): Promise<number> {
  viewers.splice(viewers.indexOf(v), 1);
  return v.stop();
}

/**
 * A viewer that has received a second of Opus: `v`, or, when the server says it sent `v` that
 * much but none arrived, one more viewer. The test client (libdatachannel) now and then delivers
 * none of a track's packets for a whole connection in a long loaded run (seen in the full
 * suite, never alone); a player would reconnect, and so does this.
 */
async function heardOpus(v: WhepViewer, url: string): Promise<WhepViewer> {
  try {
    await waitFor("a second of Opus", () => v.audioPackets() >= 50);
    return v;
  } catch (err) {
    const state = await v.state();
    const what = `${(err as Error).message}: ${v.audioPackets()} audio packets, ${v.videoPackets()} video packets received; the resource said ${JSON.stringify(state)}`;
    if (state.audioSent < 50 || v.audioPackets() > 0) throw new Error(what);
    console.warn(`${what}; asking again with another viewer`);
    const again = await play(url);
    expect(again.status).toBe(201);
    await waitFor("a second of Opus at another viewer", () => again.audioPackets() >= 50);
    return again;
  }
}

const errorsOf = (body: string) => (JSON.parse(body) as { errors: string[] }).errors;
const isRung = (f: DecodedFrame) => PROFILES.some((p) => p.width === f.width && p.height === f.height);
const size = (f: DecodedFrame) => `${f.width}x${f.height}`;

/** Decodes what the viewer received until `enough` says so; the last decode. */
async function decodedWhen(v: WhepViewer, what: string, enough: (frames: DecodedFrame[]) => boolean, timeoutMs = 20_000) {
  let last: Awaited<ReturnType<typeof decodeH264>> = { frames: [], errors: "" };
  try {
    await waitFor(what, async () => {
      last = await decodeH264(v.h264());
      return enough(last.frames);
    }, timeoutMs, 500);
  } catch (err) {
    const sizes = [...new Set(last.frames.map(size))].join(", ");
    throw new Error(`${(err as Error).message}; decoded ${last.frames.length} frames (${sizes}) from ${v.videoPackets()} packets; errors: ${last.errors}`);
  }
  return last;
}

/**
 * Reports `bps` as the viewer's estimate until its resource says it plays rendition `index`: a
 * browser repeats its REMB about once a second, and so does this viewer while it waits.
 */
async function renditionWhen(v: WhepViewer, bps: number, index: number): Promise<WhepState> {
  let last: WhepState | undefined;
  try {
    return await waitFor(`rendition ${index} at ${bps} b/s`, async () => {
      v.requestBitrate(bps);
      last = await v.state();
      return last.rendition.index === index ? last : undefined;
    }, 20_000, 500);
  } catch (err) {
    throw new Error(`${(err as Error).message}; the resource said ${JSON.stringify(last)}`);
  }
}

describe("WHEP playback", () => {
  const fx = useTestServer(SERVER_ENV);
  const origin = () => `http://127.0.0.1:${fx.t.server.port}`;
  const whep = (playbackId: string, query = "") => `${origin()}/whep/${playbackId}${query}`;
  let ladder: { id: string; playbackId: string };

  beforeAll(async () => {
    ladder = await liveStream(fx.api, fx.t.server.rtmpPort, { name: "whep ladder", profiles: PROFILES });
  });

  it("plays the ladder's H.264 and Opus; DELETE ends the resource", async () => {
    const v = await play(whep(ladder.playbackId));
    expect(v.status).toBe(201);
    expect(v.headers.get("content-type")).toBe("application/sdp");
    expect(v.resource).toMatch(new RegExp(`^${origin()}/whep/${ladder.playbackId}/[A-Za-z0-9_-]+$`));
    expect(v.headers.get("etag")).toMatch(/^(W\/)?".+"$/);
    expect(v.body).toMatch(/a=rtpmap:96 H264\/90000/);
    expect(v.body).toMatch(/a=rtpmap:111 opus\/48000\/2/);
    expect(v.body).toMatch(/a=sendonly/);
    const candidates = v.body.split(/\r?\n/).filter((l) => l.startsWith("a=candidate:"));
    expect(candidates.length).toBeGreaterThan(0);
    for (const line of candidates) expect(line.split(" ")[4]).toBe("127.0.0.1");

    const video = await decodedWhen(v, "30 decoded frames", (frames) => frames.length >= 30);
    expect(video.errors).toBe("");
    // It starts at a keyframe, at one of the ladder's sizes.
    expect(video.frames[0]!.pictType).toBe("I");
    expect(video.frames.filter((f) => !isRung(f)).map(size)).toEqual([]);
    expect(v.firstFrameMs).toBeGreaterThan(0);

    const heard = await heardOpus(v, whep(ladder.playbackId));
    expect(await decodeOpus(heard.opusPackets())).toEqual({ errors: "" });

    const state = await v.state();
    expect(state).toMatchObject({ playbackId: ladder.playbackId, estimatedBitrate: null });
    const rung = PROFILES[state.rendition.index]!;
    expect(state.rendition).toEqual({ index: state.rendition.index, name: rung.name, width: rung.width, height: rung.height, bitrate: rung.bitrate });
    expect(state.framesSent).toBeGreaterThanOrEqual(30);
    // No bandwidth estimate here: the viewer stays on its start rung, unless the receiver reported
    // loss (a loaded machine drops packets on loopback too) or a rendition fell behind.
    if (state.nacks === 0 && state.lossLimitedBitrate === null) expect(state.switches).toBe(0);

    expect(await stop(v)).toBe(200);
    expect((await fetch(v.resource!)).status).toBe(404);
    expect((await fetch(v.resource!, { method: "DELETE" })).status).toBe(404);
  });

  it("refuses an unknown playback id and a stream not live (404), another content type (415), an unusable offer (400)", async () => {
    const unknown = await play(whep("0000000000000000"));
    expect(unknown.status).toBe(404);
    expect(errorsOf(unknown.body).length).toBeGreaterThan(0);
    const idle = (await fx.api("POST", "/stream", { name: "never live", profiles: [PROFILES[LOWEST]] })).body as { playbackId: string };
    const notLive = await play(whep(idle.playbackId));
    expect(notLive.status).toBe(404);
    expect(errorsOf(notLive.body).length).toBeGreaterThan(0);

    const post = (type: string, body: string) => fetch(whep(ladder.playbackId), { method: "POST", headers: { "content-type": type }, body });
    const wrongType = await post("text/plain", "v=0\r\n");
    expect(wrongType.status).toBe(415);
    expect(errorsOf(await wrongType.text())[0]).toMatch(/application\/sdp/);
    const vp8Only = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 97\r\na=mid:0\r\na=recvonly\r\na=rtpmap:97 VP8/90000\r\n";
    for (const offer of ["hello", vp8Only]) {
      const bad = await post("application/sdp", offer);
      expect(bad.status).toBe(400);
      expect(bad.headers.get("location")).toBeNull();
      expect(errorsOf(await bad.text()).length).toBeGreaterThan(0);
    }
  });

  describe("a jwt stream", () => {
    let stream: { id: string; playbackId: string };
    let key: { privateKey: string; publicKey: string };

    beforeAll(async () => {
      stream = await liveStream(fx.api, fx.t.server.rtmpPort, { name: "whep members only", profiles: [PROFILES[LOWEST]], playbackPolicy: { type: "jwt" } });
      const res = await fx.api("POST", "/access-control/signing-key", {});
      expect(res.status).toBe(200);
      key = res.body;
    });

    it("refuses WHEP without a token or with an expired one (401)", async () => {
      const none = await play(whep(stream.playbackId));
      expect(none.status).toBe(401);
      expect(errorsOf(none.body)[0]).toMatch(/JWT/i);
      const expired = await play(whep(stream.playbackId, `?jwt=${await signJwt(key, stream.playbackId, -60)}`));
      expect(expired.status).toBe(401);
      expect(errorsOf(expired.body)[0]).toMatch(/expired/);
    });

    it("plays with one in the query, in Livepeer-Jwt or as a bearer token", async () => {
      const jwt = await signJwt(key, stream.playbackId, 3600);
      const viaQuery = await play(whep(stream.playbackId, `?jwt=${jwt}`));
      expect(viaQuery.status).toBe(201);
      const video = await decodedWhen(viaQuery, "10 decoded frames", (frames) => frames.length >= 10);
      expect(video.errors).toBe("");
      expect(video.frames.every((f) => f.width === 160 && f.height === 90)).toBe(true);
      expect(await stop(viaQuery)).toBe(200);
      for (const opts of [{ headers: { "livepeer-jwt": jwt } }, { bearer: jwt }]) {
        const v = await play(whep(stream.playbackId), opts);
        expect(v.status).toBe(201);
        await waitFor("a keyframe", () => v.firstFrameMs !== undefined);
        expect(await stop(v)).toBe(200);
      }
    });
  });

  describe("a webhook stream", () => {
    let receiver: Receiver;
    beforeAll(async () => {
      // The owner's own access check: one access key is let in.
      receiver = await startReceiver(({ body }) => (body?.accessKey === "let-me-in" ? 200 : 403));
    });
    afterAll(() => receiver.close());

    it("plays with an access key the owner's webhook admits (?accessKey=), and not with another or none (401)", async () => {
      const webhook = (await fx.api("POST", "/webhook", { name: "access", url: receiver.url, events: ["stream.started"] })).body as { id: string };
      const stream = await liveStream(fx.api, fx.t.server.rtmpPort, { name: "whep ask me", profiles: [PROFILES[LOWEST]], playbackPolicy: { type: "webhook", webhookId: webhook.id } });
      const before = receiver.received.length;
      for (const query of ["?accessKey=wrong", ""]) {
        const refused = await play(whep(stream.playbackId, query));
        expect(refused.status).toBe(401);
        expect(errorsOf(refused.body).length).toBeGreaterThan(0);
      }
      const admitted = await play(whep(stream.playbackId, "?accessKey=let-me-in"));
      expect(admitted.status).toBe(201);
      await waitFor("a keyframe", () => admitted.firstFrameMs !== undefined);
      // The owner's webhook was asked about each key (its stream.started deliveries aside).
      const asked = receiver.received.slice(before).filter((r) => r.body?.accessKey !== undefined);
      expect(asked.map((r) => r.body.accessKey)).toEqual(["wrong", "let-me-in"]);
      expect(await stop(admitted)).toBe(200);
    });

    it("takes the access key in a Livepeer-Access-Key header, as Livepeer's player sends it, and answers its HEAD", async () => {
      const webhook = (await fx.api("POST", "/webhook", { name: "access by header", url: receiver.url, events: ["stream.started"] })).body as { id: string };
      const stream = await liveStream(fx.api, fx.t.server.rtmpPort, { name: "whep key header", profiles: [PROFILES[LOWEST]], playbackPolicy: { type: "webhook", webhookId: webhook.id } });
      // The player's first request, cross-origin: it must read the response (CORS), not its status.
      const head = await fetch(whep(stream.playbackId), { method: "HEAD", headers: { origin: "http://player.example" } });
      expect(head.status).toBe(204);
      expect(head.headers.get("access-control-allow-origin")).toBe("*");
      const preflight = await fetch(whep(stream.playbackId), { method: "OPTIONS", headers: { origin: "http://player.example", "access-control-request-headers": "content-type, livepeer-access-key" } });
      expect(preflight.headers.get("access-control-allow-headers")).toMatch(/Livepeer-Access-Key/i);
      expect((await play(whep(stream.playbackId), { headers: { "livepeer-access-key": "wrong" } })).status).toBe(401);
      const admitted = await play(whep(stream.playbackId), { headers: { "livepeer-access-key": "let-me-in" } });
      expect(admitted.status).toBe(201);
      await waitFor("a keyframe", () => admitted.firstFrameMs !== undefined);
      expect(await stop(admitted)).toBe(200);
    });
  });

  it("moves a viewer that reports 150 kb/s to the lowest rendition, and back up at 5 Mb/s", async () => {
    const v = await play(whep(ladder.playbackId));
    expect(v.status).toBe(201);
    await waitFor("a keyframe", () => v.firstFrameMs !== undefined);

    const down = await renditionWhen(v, 150_000, LOWEST);
    expect(down).toMatchObject({ estimatedBitrate: 150_000, rendition: { name: "90p", width: 160, height: 90 } });
    const low = await decodedWhen(v, "30 frames at 160x90", (frames) => frames.filter((f) => f.width === 160).length >= 30);
    expect(low.errors).toBe("");

    const up = await renditionWhen(v, 5_000_000, 0);
    expect(up).toMatchObject({ estimatedBitrate: 5_000_000, rendition: { name: "360p", width: 640, height: 360 } });
    expect(up.switches).toBeGreaterThan(down.switches);
    const all = await decodedWhen(v, "30 frames at 640x360 after the 160x90 ones", (frames) => frames.slice(frames.findIndex((f) => f.width === 160)).filter((f) => f.width === 640).length >= 30);
    expect(all.errors).toBe("");
    expect(all.frames.filter((f) => !isRung(f)).map(size)).toEqual([]);
    // Each change of size is at a keyframe.
    const changes = all.frames.flatMap((f, i) => (i > 0 && size(f) !== size(all.frames[i - 1]!) ? [f] : []));
    expect(changes.length).toBeGreaterThanOrEqual(1);
    expect(changes.map((f) => f.pictType)).toEqual(changes.map(() => "I"));
    expect(all.frames.at(-1)).toMatchObject({ width: 640, height: 360 });
  });
});

describe("WHEP playback of an H.264 source packaged as sent", () => {
  const fx = useTestServer(SERVER_ENV);
  const processes = () => fx.t.server.processes.size;

  it("sends the publisher's own frames and Opus; the Opus encoder runs only while someone watches", async () => {
    const stream = await liveStream(fx.api, fx.t.server.rtmpPort, { name: "whep source" });
    // Live with no process of the server's: the ingest writes the packager's parts.
    expect(processes()).toBe(0);

    const v = await play(`http://127.0.0.1:${fx.t.server.port}/whep/${stream.playbackId}`);
    expect(v.status).toBe(201);
    expect(v.body).toMatch(/a=rtpmap:96 H264\/90000/);
    expect(v.body).toMatch(/a=rtpmap:111 opus\/48000\/2/);
    const video = await decodedWhen(v, "30 decoded frames", (frames) => frames.length >= 30);
    expect(video.errors).toBe("");
    expect(video.frames[0]!.pictType).toBe("I");
    // The push's own size: nothing was encoded.
    expect(video.frames.filter((f) => size(f) !== "640x360").map(size)).toEqual([]);
    // One process while someone watches: the audio's Opus encoder.
    expect(processes()).toBe(1);
    const heard = await heardOpus(v, `http://127.0.0.1:${fx.t.server.port}/whep/${stream.playbackId}`);
    expect(await decodeOpus(heard.opusPackets())).toEqual({ errors: "" });
    if (heard !== v) await stop(heard);
    expect((await v.state()).rendition.index).toBe(0);

    // The last viewer gone, the encoder outlives it a while (OPUS_LINGER_MS), then stops.
    expect(await stop(v)).toBe(200);
    expect(processes()).toBe(1);
    await waitFor("the Opus encoder to stop", () => processes() === 0, 20_000);

    // A viewer coming later starts another, and is sent audio again (counted by the server: the
    // test client's demultiplexer now and then loses a track's packets on a loaded machine).
    const again = await play(`http://127.0.0.1:${fx.t.server.port}/whep/${stream.playbackId}`);
    expect(again.status).toBe(201);
    await waitFor("a second of Opus sent to the next viewer", async () => (await again.state()).audioSent >= 50, 20_000, 250);
    expect(processes()).toBe(1);
  });
});

/**
 * The one UDP port of the shared-port server: below Linux's ephemeral range (32768-60999), where
 * the other suites' peers bind theirs, so nothing else of the run takes it.
 */
const UDP_PORT = 20_000 + Math.floor(Math.random() * 12_000);

/** The port of every candidate an answer names. */
const candidatePorts = (sdp: string) => sdp.split(/\r?\n/).filter((l) => l.startsWith("a=candidate:")).map((l) => Number(l.split(" ")[5]));

describe("WHEP viewer caps, on one UDP port", () => {
  const fx = useTestServer({ ...SERVER_ENV, WEBRTC_MAX_VIEWERS_PER_STREAM: "1", WEBRTC_UDP_PORTS: String(UDP_PORT) });
  const whep = (playbackId: string) => `http://127.0.0.1:${fx.t.server.port}/whep/${playbackId}`;

  it("answers 503 with Retry-After past WEBRTC_MAX_VIEWERS_PER_STREAM, and lets a viewer in once one leaves", async () => {
    const stream = await liveStream(fx.api, fx.t.server.rtmpPort, { name: "one viewer", profiles: [PROFILES[LOWEST]] });
    const first = await play(whep(stream.playbackId));
    expect(first.status).toBe(201);
    // WEBRTC_UDP_PORTS names one port: every peer answers on it.
    expect(candidatePorts(first.body)).toEqual([UDP_PORT]);
    const second = await play(whep(stream.playbackId));
    expect(second.status).toBe(503);
    expect(second.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(second.resource).toBeUndefined();
    expect(errorsOf(second.body).length).toBeGreaterThan(0);

    expect(await stop(first)).toBe(200);
    const third = await play(whep(stream.playbackId));
    expect(third.status).toBe(201);
    expect(candidatePorts(third.body)).toEqual([UDP_PORT]);
    await waitFor("a keyframe", () => third.firstFrameMs !== undefined);
  });
});

describe("WebRTC playback off (WEBRTC_PLAYBACK=false)", () => {
  const fx = useTestServer({ ...SERVER_ENV, WEBRTC_PLAYBACK: "false" });

  it("lists no WebRTC source and answers WHEP with 404; HLS plays", async () => {
    const stream = await liveStream(fx.api, fx.t.server.rtmpPort, { name: "hls only", profiles: [PROFILES[LOWEST]] });
    const info = (await fx.api("GET", `/playback/${stream.playbackId}`)).body as { meta: { source: { hrn: string }[] } };
    expect(info.meta.source.map((s) => s.hrn)).toEqual(["HLS (TS)", "Thumbnail (JPEG)"]);
    const v = await play(`http://127.0.0.1:${fx.t.server.port}/whep/${stream.playbackId}`);
    expect(v.status).toBe(404);
    expect(errorsOf(v.body)[0]).toMatch(/WEBRTC_PLAYBACK=false/);
    expect((await fetch(`http://127.0.0.1:${fx.t.server.port}/hls/${stream.playbackId}/index.m3u8`)).status).toBe(200);
  });
});

