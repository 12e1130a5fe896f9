import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { signJwt } from "../helpers/jwt";
import { probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// The seek preview of a DVR stream over real RTMP: storyboard.vtt's cues come about every 5 s
// and cover the pushed media, and name the sprite drawn from exactly their tiles (still served
// once a newer one is built); a stream without DVR has none; a jwt stream's storyboard needs
// the viewer's token, as its media do, and passes on only that.

const fx = useTestServer({ HLS_SEGMENT_SECONDS: "1" });
const { api } = fx;
const PUSH_SECONDS = 40;
const pushes: Push[] = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-storyboard-"));

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
const seconds = (t: string) => t.split(":").reduce((sum, part) => sum * 60 + Number(part), 0);

interface Cue {
  start: number;
  end: number;
  xywh: number[];
}

/** The cues of a storyboard VTT and the sprite they name (one for all), checked for its shape on the way. */
function parseVtt(text: string): { note: string; cues: Cue[]; sprite: string } {
  const blocks = text.trim().split(/\n\n+/);
  expect(blocks[0]).toBe("WEBVTT");
  const note = /^NOTE program-date-time (\S+)$/.exec(blocks[1]!)![1]!;
  const sprites = new Set<string>();
  const cues = blocks.slice(2).map((b) => {
    const m = /^(\d\d:\d\d:\d\d\.\d{3}) --> (\d\d:\d\d:\d\d\.\d{3})\n(storyboard\.jpg\?v=[0-9a-z]+(?:&[^#\n]*)?)#xywh=(\d+),(\d+),(\d+),(\d+)$/.exec(b);
    expect(m).not.toBeNull();
    sprites.add(m![3]!);
    return { start: seconds(m![1]!), end: seconds(m![2]!), xywh: m!.slice(4, 8).map(Number) };
  });
  expect(sprites.size).toBe(1);
  return { note, cues, sprite: [...sprites][0]! };
}

/** A sprite's picture size, fetched and probed. */
async function spriteSize(url: string): Promise<{ width: number; height: number }> {
  const sprite = await fetch(url);
  expect(sprite.status).toBe(200);
  expect(sprite.headers.get("content-type")).toBe("image/jpeg");
  const file = path.join(dir, `sprite-${Date.now()}.jpg`);
  fs.writeFileSync(file, Buffer.from(await sprite.arrayBuffer()));
  const [video] = (await probe(file)).streams;
  expect(video!.codec_name).toBe("mjpeg");
  return { width: video!.width!, height: video!.height! };
}

let dvr: Stream;
let plain: Stream;
beforeAll(async () => {
  [dvr, plain] = await Promise.all([pushed({ name: "dvr", dvrWindow: 120 }), pushed({ name: "no dvr" })]);
  await waitFor("15 s of media", async () => (await recordedSeconds(dvr)) >= 15 && (await recordedSeconds(plain)) >= 5, 40_000, 250);
});

describe("live storyboard", () => {
  it("has a cue about every 5 s over the pushed media, each a tile inside the sprite", async () => {
    const playback = (await api("GET", `/playback/${dvr.playbackId}`)).body as { meta: { source: { hrn: string; type: string; url: string }[] } };
    expect(playback.meta.source).toContainEqual({ hrn: "Storyboard (VTT)", type: "text/vtt", url: expect.stringMatching(/\/storyboard\.vtt$/) });
    const res = await fetch(base(dvr) + "storyboard.vtt");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/vtt/);
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const { note, cues, sprite: spriteUrl } = parseVtt(await res.text());
    expect(Number.isNaN(Date.parse(note))).toBe(false);
    expect(cues.length).toBeGreaterThanOrEqual(3);
    expect(cues[0]!.start).toBe(0);
    cues.slice(1).forEach((c, i) => {
      expect(c.start).toBe(cues[i]!.end);
      expect(c.start - cues[i]!.start).toBeGreaterThanOrEqual(4.5);
      expect(c.start - cues[i]!.start).toBeLessThanOrEqual(7);
    });
    expect(cues[cues.length - 1]!.end).toBeGreaterThanOrEqual(12);
    // The sprite the VTT names is drawn from exactly its tiles: its grid is the cues'.
    const video = await spriteSize(base(dvr) + spriteUrl);
    expect(video.width).toBe(Math.min(10, cues.length) * 160);
    expect(video.height).toBe(Math.ceil(cues.length / 10) * cues[0]!.xywh[3]!);
    for (const { xywh: [x, y, w, h] } of cues) {
      expect(w).toBe(160);
      expect(x! + w!).toBeLessThanOrEqual(video.width);
      expect(y! + h!).toBeLessThanOrEqual(video.height);
    }
  });

  it("a VTT read after a new tile names a new sprite; the one before is still served, and the cues kept their times", async () => {
    const before = parseVtt(await (await fetch(base(dvr) + "storyboard.vtt")).text());
    const after = await waitFor("a new tile", async () => {
      const v = parseVtt(await (await fetch(base(dvr) + "storyboard.vtt")).text());
      return v.cues.length > before.cues.length ? v : undefined;
    }, 15_000, 500);
    expect(after.sprite).not.toBe(before.sprite);
    expect(after.note).toBe(before.note);
    expect(after.cues.slice(0, before.cues.length - 1)).toEqual(before.cues.slice(0, -1));
    expect((await spriteSize(base(dvr) + before.sprite)).width).toBe(Math.min(10, before.cues.length) * 160);
    expect((await fetch(base(dvr) + "storyboard.jpg?v=nosuchbuild")).status).toBe(404);
  });

  it("a stream without DVR has none", async () => {
    expect((await fetch(base(plain) + "storyboard.vtt")).status).toBe(404);
    expect((await fetch(base(plain) + "storyboard.jpg")).status).toBe(404);
    const playback = (await api("GET", `/playback/${plain.playbackId}`)).body as { meta: { source: { hrn: string }[] } };
    expect(playback.meta.source.map((s) => s.hrn)).not.toContain("Storyboard (VTT)");
  });

  it("a jwt stream's storyboard needs the token", async () => {
    const key = (await api("POST", "/access-control/signing-key", {})).body as { privateKey: string; publicKey: string };
    const gated = await pushed({ name: "dvr, members only", dvrWindow: 60, playbackPolicy: { type: "jwt" } });
    await waitFor("a first tile", async () => (await recordedSeconds(gated)) >= 3, 30_000, 250);
    const jwt = await signJwt(key, gated.playbackId, 3600);
    await waitFor("the storyboard", async () => (await fetch(base(gated) + `storyboard.vtt?jwt=${jwt}`)).status === 200, 15_000, 250);
    expect((await fetch(base(gated) + "storyboard.vtt")).status).toBe(401);
    expect((await fetch(base(gated) + "storyboard.jpg")).status).toBe(401);
    const res = await fetch(base(gated) + `storyboard.vtt?jwt=${jwt}&other=%3Cscript%3E`);
    expect(res.headers.get("cache-control")).toBe("private, no-cache");
    // The sprite's URL carries the viewer's token and nothing else of the query: relative to the VTT's, it loads.
    const { sprite } = parseVtt(await res.text());
    expect(new URLSearchParams(sprite.slice(sprite.indexOf("?") + 1)).get("jwt")).toBe(jwt);
    expect(sprite).not.toContain("other");
    const image = await fetch(base(gated) + sprite);
    expect(image.status).toBe(200);
    expect(image.headers.get("cache-control")).toBe("private, no-cache");
  });
});
