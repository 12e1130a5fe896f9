import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { signJwt } from "../helpers/jwt";
import { probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// The seek preview of a DVR stream over real RTMP: storyboard.vtt's cues come about every 5 s
// and cover the pushed media, their tiles fall inside the sprite; a stream without DVR has
// none; a jwt stream's storyboard needs the viewer's token, as its media do.

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

/** The cues of a storyboard VTT, checked for its shape on the way. */
function parseVtt(text: string): { note: string; cues: Cue[] } {
  const blocks = text.trim().split(/\n\n+/);
  expect(blocks[0]).toBe("WEBVTT");
  const note = /^NOTE program-date-time (\S+)$/.exec(blocks[1]!)![1]!;
  const cues = blocks.slice(2).map((b) => {
    const m = /^(\d\d:\d\d:\d\d\.\d{3}) --> (\d\d:\d\d:\d\d\.\d{3})\nstoryboard\.jpg(?:\?[^#\n]*)?#xywh=(\d+),(\d+),(\d+),(\d+)$/.exec(b);
    expect(m).not.toBeNull();
    return { start: seconds(m![1]!), end: seconds(m![2]!), xywh: m!.slice(3, 7).map(Number) };
  });
  return { note, cues };
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
    const { note, cues } = parseVtt(await res.text());
    expect(Number.isNaN(Date.parse(note))).toBe(false);
    expect(cues.length).toBeGreaterThanOrEqual(3);
    expect(cues[0]!.start).toBe(0);
    cues.slice(1).forEach((c, i) => {
      expect(c.start).toBe(cues[i]!.end);
      expect(c.start - cues[i]!.start).toBeGreaterThanOrEqual(4.5);
      expect(c.start - cues[i]!.start).toBeLessThanOrEqual(7);
    });
    expect(cues[cues.length - 1]!.end).toBeGreaterThanOrEqual(12);
    const sprite = await fetch(base(dvr) + "storyboard.jpg");
    expect(sprite.status).toBe(200);
    expect(sprite.headers.get("content-type")).toBe("image/jpeg");
    const file = path.join(dir, "sprite.jpg");
    fs.writeFileSync(file, Buffer.from(await sprite.arrayBuffer()));
    const [video] = (await probe(file)).streams;
    expect(video!.codec_name).toBe("mjpeg");
    // The sprite may have gained a tile since the VTT was read: its grid is at least the VTT's.
    expect(video!.width).toBe(Math.min(10, Math.max(cues.length, video!.width! / 160)) * 160);
    for (const { xywh: [x, y, w, h] } of cues) {
      expect(w).toBe(160);
      expect(x! + w!).toBeLessThanOrEqual(video!.width!);
      expect(y! + h!).toBeLessThanOrEqual(video!.height!);
    }
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
    const vtt = await (await fetch(base(gated) + `storyboard.vtt?jwt=${jwt}`)).text();
    // The sprite's URL carries the viewer's token: relative to the VTT's, it loads.
    const sprite = /\n(storyboard\.jpg\?[^#\n]+)#xywh/.exec(vtt)![1]!;
    expect(sprite).toContain(`jwt=${jwt}`);
    expect((await fetch(base(gated) + sprite)).status).toBe(200);
  });
});
