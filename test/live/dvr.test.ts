import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as HLS from "hls-parser";
import { signJwt } from "../helpers/jwt";
import { probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// Live DVR over real RTMP: a stream with a dvrWindow lists its media back to the window's start
// (the oldest segments read from disk), strict-parser clean, with delta updates; a stream
// without one is as before; clips reach back the window (90 s here); a jwt stream's old segments
// need the token; an ended session's window is deleted once its time is over.

HLS.setOptions({ strictMode: true, silent: true });

// 1 s segments, 3 listed without DVR; clips' own window shorter than what is asked of DVR here.
const fx = useTestServer({ HLS_SEGMENT_SECONDS: "1", HLS_LIST_SIZE: "3", CLIP_WINDOW_SECONDS: "2" });
const { api } = fx;
/** The DVR stream's push: long enough for a clip 90 s back while it is still live. */
const DVR_PUSH_SECONDS = 105;
const PUSH_SECONDS = 40;
const pushes: Push[] = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-dvr-"));

afterAll(async () => {
  for (const p of pushes) p.child.kill("SIGKILL");
  await Promise.all(pushes.map((p) => p.exited));
  fs.rmSync(dir, { recursive: true, force: true });
});

type Stream = { id: string; playbackId: string; streamKey: string };

async function pushed(body: Record<string, unknown>, seconds = PUSH_SECONDS): Promise<Stream> {
  const res = await api("POST", "/stream", body);
  expect(res.status).toBe(201);
  const s = res.body as Stream;
  pushes.push(pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds }));
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
  [dvr, plain] = await Promise.all([pushed({ name: "dvr", dvrWindow: 120 }, DVR_PUSH_SECONDS), pushed({ name: "no dvr" })]);
  await waitFor("14 s of media", async () => (await recordedSeconds(dvr)) >= 14 && (await recordedSeconds(plain)) >= 14, 40_000, 250);
});

describe("live DVR", () => {
  // First: its push is the shorter one.
  it("leaves a stream without DVR as it was: its window alone, no delta updates", async () => {
    const playlist = await text(base(plain) + "0/index.m3u8");
    // HLS_LIST_SIZE, raised to three target durations (RFC 8216 §6.2.2): 6 one-second segments of a copied source.
    expect(segmentUris(playlist)).toHaveLength(6);
    expect(playlist).not.toContain("CAN-SKIP-UNTIL");
    expect(await text(base(plain) + "0/index.m3u8?_HLS_skip=YES")).not.toContain("#EXT-X-SKIP");
    expect((await api("GET", `/stream/${plain.id}`)).body.dvrWindow).toBeNull();
  });

  it("lists the stream back to its start, the oldest from disk, decodable; playlists pass a strict parser", async () => {
    expect((await api("GET", `/stream/${dvr.id}`)).body.dvrWindow).toBe(120);
    await waitFor("60 s of media", async () => (await recordedSeconds(dvr)) >= 60, 70_000, 500);
    const playlist = await text(base(dvr) + "0/index.m3u8");
    const pl = HLS.parse(playlist) as HLS.types.MediaPlaylist;
    const listed = pl.segments.filter((s) => s.uri);
    const seconds = listed.reduce((t, s) => t + s.duration, 0);
    expect(seconds).toBeGreaterThanOrEqual(55);
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
  }, 90_000);

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

  it("clips 90 s back from the live edge, further back than the clip buffer keeps", async () => {
    await waitFor("94 s of media", async () => (await recordedSeconds(dvr)) >= 94, 60_000, 500);
    const pl = HLS.parse(await text(base(dvr) + "0/index.m3u8")) as HLS.types.MediaPlaylist;
    const edge = pl.segments.filter((s) => s.uri).at(-1)!;
    const start = edge.programDateTime!.getTime() + edge.duration * 1000 - 90_000;
    // Still live: the clip comes from the live window.
    expect((await api("GET", `/stream/${dvr.id}`)).body.isActive).toBe(true);
    expect(pl.segments[0]!.programDateTime!.getTime()).toBeLessThan(start);
    const created = await api("POST", "/clip", { playbackId: dvr.playbackId, startTime: start, endTime: start + 3000, name: "90 s back" });
    expect(created.status).toBe(200);
    const id = created.body.asset.id as string;
    const ready = await waitFor("the clip", async () => {
      const got = (await api("GET", `/asset/${id}`)).body;
      if (got.status.phase === "failed") throw new Error(`clip failed: ${got.status.errorMessage}`);
      return got.status.phase === "ready" ? got : undefined;
    }, 30_000, 250);
    expect((await probe(ready.downloadUrl)).duration).toBeCloseTo(3, 0);
  }, 120_000);

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

  it("deletes an ended session's window once its time is over (at most the window's length after the end)", async () => {
    const short = await pushed({ name: "dvr, short", dvrWindow: 6 }, 4);
    const folder = path.join(fx.t.dataDir, "hls", short.playbackId);
    // Ended: its playlist on disk says so.
    const ended = () => fs.readFileSync(path.join(folder, "0", "index.m3u8"), "utf8").includes("#EXT-X-ENDLIST");
    await waitFor("its session's end", async () => fs.existsSync(path.join(folder, "0", "index.m3u8")) && ended(), 30_000, 250);
    expect((await api("GET", `/stream/${short.id}`)).body.isActive).toBe(false);
    // 6 s after the end, and a look every 5 s.
    await waitFor("the window deleted", async () => !fs.existsSync(folder), 20_000, 250);
  }, 60_000);
});
