import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as HLS from "hls-parser";
import { signJwt } from "../helpers/jwt";
import { probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// Live DVR over real RTMP: a stream with a dvrWindow lists its media back to the window's start
// (the oldest segments read from disk), strict-parser clean, with delta updates; a stream
// without one is as before; clips reach back the window; a jwt stream's old segments need the token.

HLS.setOptions({ strictMode: true, silent: true });

// 1 s segments, 3 listed without DVR; clips' own window shorter than what is asked of DVR here.
const fx = useTestServer({ HLS_SEGMENT_SECONDS: "1", HLS_LIST_SIZE: "3", CLIP_WINDOW_SECONDS: "2" });
const { api } = fx;
const PUSH_SECONDS = 40;
const pushes: Push[] = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-dvr-"));

afterAll(async () => {
  for (const p of pushes) p.child.kill("SIGKILL");
  await Promise.all(pushes.map((p) => p.exited));
  fs.rmSync(dir, { recursive: true, force: true });
});

type Stream = { id: string; playbackId: string; streamKey: string };

async function pushed(body: Record<string, unknown>): Promise<Stream> {
  const res = await api("POST", "/stream", body);
  expect(res.status).toBe(201);
  const s = res.body as Stream;
  pushes.push(pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: PUSH_SECONDS }));
  return s;
}

const base = (s: Stream) => `http://127.0.0.1:${fx.t.server.port}/hls/${s.playbackId}/`;
const recordedSeconds = async (s: Stream) => (await api("GET", `/stream/${s.id}`)).body.sourceSegmentsDuration as number;
const text = async (url: string) => {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return res.text();
};
const segmentUris = (playlist: string) => playlist.split("\n").filter((l) => /\.m4s(\?|$)/.test(l));

let dvr: Stream;
let plain: Stream;
beforeAll(async () => {
  [dvr, plain] = await Promise.all([pushed({ name: "dvr", dvrWindow: 120 }), pushed({ name: "no dvr" })]);
  await waitFor("14 s of media", async () => (await recordedSeconds(dvr)) >= 14 && (await recordedSeconds(plain)) >= 14, 40_000, 250);
});

describe("live DVR", () => {
  it("lists the stream back to its start, the oldest from disk, decodable; playlists pass a strict parser", async () => {
    expect((await api("GET", `/stream/${dvr.id}`)).body.dvrWindow).toBe(120);
    const playlist = await text(base(dvr) + "0/index.m3u8");
    const pl = HLS.parse(playlist) as HLS.types.MediaPlaylist;
    const listed = pl.segments.filter((s) => s.uri);
    const seconds = listed.reduce((t, s) => t + s.duration, 0);
    expect(seconds).toBeGreaterThanOrEqual(13);
    // Memory holds the window and a grace list (3 + 8 segments here): older ones come from disk.
    expect(listed.length).toBeGreaterThan(11);
    // Six target durations (a copied source's is 2 s).
    expect(pl.lowLatencyCompatibility?.canSkipUntil).toBe(6 * pl.targetDuration);
    // Its first segment, from the start of the session, decodes with its init.
    const first = listed[0]!;
    const file = path.join(dir, "first.mp4");
    fs.writeFileSync(file, Buffer.concat([Buffer.from(await (await fetch(base(dvr) + "0/" + first.map!.uri)).arrayBuffer()), Buffer.from(await (await fetch(base(dvr) + "0/" + first.uri)).arrayBuffer())]));
    const probed = await probe(file);
    expect(probed.streams.map((s) => s.codec_name).sort()).toEqual(["aac", "h264"]);
    expect(probed.duration).toBeGreaterThan(0.5);
  });

  it("answers _HLS_skip=YES with a delta update: an EXT-X-SKIP, the same tail, fewer bytes", async () => {
    const whole = await text(base(dvr) + "0/index.m3u8");
    const delta = await text(base(dvr) + "0/index.m3u8?_HLS_skip=YES");
    const skipped = Number(/#EXT-X-SKIP:SKIPPED-SEGMENTS=(\d+)/.exec(delta)?.[1]);
    expect(skipped).toBeGreaterThan(0);
    expect(delta.length).toBeLessThan(whole.length);
    expect(() => HLS.parse(delta)).not.toThrow();
    // Segments both name are the same files (the live edge may have moved between the two requests).
    const tail = segmentUris(delta);
    expect(segmentUris(whole).filter((u) => tail.includes(u)).length).toBeGreaterThan(0);
    expect((await fetch(base(dvr) + "0/index.m3u8?_HLS_skip=maybe")).status).toBe(400);
  });

  it("leaves a stream without DVR as it was: its window alone, no delta updates", async () => {
    const playlist = await text(base(plain) + "0/index.m3u8");
    // HLS_LIST_SIZE, raised to three target durations (RFC 8216 §6.2.2): 6 one-second segments of a copied source.
    expect(segmentUris(playlist)).toHaveLength(6);
    expect(playlist).not.toContain("CAN-SKIP-UNTIL");
    expect(await text(base(plain) + "0/index.m3u8?_HLS_skip=YES")).not.toContain("#EXT-X-SKIP");
    expect((await api("GET", `/stream/${plain.id}`)).body.dvrWindow).toBeNull();
  });

  it("clips from the window, further back than the clip buffer keeps", async () => {
    const pl = HLS.parse(await text(base(dvr) + "0/index.m3u8")) as HLS.types.MediaPlaylist;
    const start = pl.segments[1]!.programDateTime!.getTime();
    const created = await api("POST", "/clip", { playbackId: dvr.playbackId, startTime: start, endTime: start + 3000, name: "from the window" });
    expect(created.status).toBe(200);
    const id = created.body.asset.id as string;
    const ready = await waitFor("the clip", async () => {
      const got = (await api("GET", `/asset/${id}`)).body;
      if (got.status.phase === "failed") throw new Error(`clip failed: ${got.status.errorMessage}`);
      return got.status.phase === "ready" ? got : undefined;
    }, 30_000, 250);
    expect((await probe(ready.downloadUrl)).duration).toBeCloseTo(3, 0);
  });

  it("a jwt stream's old segments and delta updates need the token, as its live media does", async () => {
    const key = (await api("POST", "/access-control/signing-key", {})).body as { privateKey: string; publicKey: string };
    const gated = await pushed({ name: "dvr, members only", dvrWindow: 60, playbackPolicy: { type: "jwt" } });
    await waitFor("12 s of media", async () => (await recordedSeconds(gated)) >= 12, 30_000, 250);
    const jwt = await signJwt(key, gated.playbackId, 3600);
    expect((await fetch(base(gated) + "index.m3u8")).status).toBe(401);
    const master = await text(base(gated) + `index.m3u8?jwt=${jwt}`);
    const variant = master.split("\n").find((l) => l.startsWith("0/"))!;
    const playlist = await text(base(gated) + variant);
    const oldest = segmentUris(playlist)[0]!;
    // Named with the viewer's token, it plays; without, it does not.
    expect((await fetch(base(gated) + "0/" + oldest)).status).toBe(200);
    expect((await fetch(base(gated) + "0/" + oldest.split("?")[0])).status).toBe(401);
    expect((await fetch(base(gated) + "0/index.m3u8?_HLS_skip=YES")).status).toBe(401);
    // Its viewers' playlists name media with tokens that expire: they are not offered delta
    // updates (a merged delta would keep old URIs whose tokens ran out), and get whole ones.
    expect(playlist).not.toContain("CAN-SKIP-UNTIL");
    const asked = await text(base(gated) + variant + "&_HLS_skip=YES");
    expect(asked).not.toContain("#EXT-X-SKIP");
    expect(segmentUris(asked).length).toBeGreaterThan(6);
  });
});
