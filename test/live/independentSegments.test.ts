import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { FFPROBE, pushTestStream, waitFor, type Push } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// Honest playlists: a master says EXT-X-INDEPENDENT-SEGMENTS only while every segment starts
// on a keyframe (RFC 8216 §4.3.5.1). A passthrough source with a 5 s GOP, longer than the
// 2 s TARGETDURATION, is cut between keyframes: its master never says it. A 1 s GOP keeps it.

const fx = useTestServer();
const { api } = fx;
const FPS = 30;
const x264 = (gopFrames: number) => ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", String(gopFrames), "-keyint_min", String(gopFrames), "-sc_threshold", "0", "-pix_fmt", "yuv420p", "-b:v", "500k"];

const pushes: Push[] = [];
/** The 5 s GOP stream, for the clip. */
let longGop: { playbackId: string; variant: string };
afterAll(async () => {
  for (const p of pushes) p.child.kill("SIGKILL");
  await Promise.all(pushes.map((p) => p.exited));
});

/** A passthrough stream (no profiles) pushed with `gopFrames` between keyframes. */
async function publish(name: string, gopFrames: number): Promise<{ playbackId: string; id: string }> {
  const s = (await api("POST", "/stream", { name, profiles: [] })).body;
  pushes.push(pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 20, fps: FPS, codec: x264(gopFrames) }));
  return s;
}

const base = (playbackId: string) => `http://127.0.0.1:${fx.t.server.port}/hls/${playbackId}/`;

/** The master as players get it, once it is served. */
const master = (playbackId: string) => waitFor(`the master of ${playbackId}`, async () => {
  const res = await fetch(base(playbackId) + "index.m3u8");
  return res.status === 200 ? res.text() : undefined;
}, 20_000, 200);

interface Listed {
  /** wall-clock ms */
  start: number;
  /** Its first part is INDEPENDENT=YES (undefined: listed without its parts). */
  keyed: boolean | undefined;
}

/** The complete segments of a live playlist, read from its PROGRAM-DATE-TIME and parts. */
function listed(text: string): Listed[] {
  const out: Listed[] = [];
  let first: boolean | undefined;
  let pdt: number | undefined;
  for (const line of text.split("\n").map((l) => l.trim())) {
    if (line.startsWith("#EXT-X-PROGRAM-DATE-TIME:")) pdt = Date.parse(line.slice(25));
    else if (line.startsWith("#EXT-X-PART:")) first ??= line.includes("INDEPENDENT=YES");
    else if (line !== "" && !line.startsWith("#")) {
      out.push({ start: pdt!, keyed: first });
      first = undefined;
    }
  }
  return out;
}

/** Once the live playlist lists `n` complete segments: whether each listed with its parts starts on a keyframe, and all of them. */
async function segmentStarts(playbackId: string, variant: string, n: number): Promise<{ starts: boolean[]; segments: Listed[] }> {
  return waitFor(`${n} segments of ${playbackId}`, async () => {
    const segments = listed(await (await fetch(base(playbackId) + variant)).text());
    const starts = segments.flatMap((x) => (x.keyed === undefined ? [] : [x.keyed]));
    return segments.length >= n && starts.length >= 2 ? { starts, segments } : undefined;
  }, 20_000, 250);
}

describe("EXT-X-INDEPENDENT-SEGMENTS", () => {
  it("a 5 s GOP passthrough source: never in its master, whose segments do not all start on a keyframe; a 1 s GOP source keeps it", async () => {
    const [long, short] = await Promise.all([publish("5 s GOP", 5 * FPS), publish("1 s GOP", FPS)]);
    const [longFirst, shortFirst] = await Promise.all([master(long.playbackId), master(short.playbackId)]);
    expect(longFirst).not.toContain("#EXT-X-INDEPENDENT-SEGMENTS");
    expect(shortFirst.split("\n")).toContain("#EXT-X-INDEPENDENT-SEGMENTS");

    // Over several segments (past the long GOP's second keyframe) the claims still hold.
    const variant = (m: string) => m.split("\n").find((l) => l.trim() !== "" && !l.startsWith("#"))!.trim();
    const [longStarts, shortStarts] = await Promise.all([segmentStarts(long.playbackId, variant(longFirst), 5), segmentStarts(short.playbackId, variant(shortFirst), 5)]);
    const [longLater, shortLater] = await Promise.all([master(long.playbackId), master(short.playbackId)]);
    expect(longLater).not.toContain("#EXT-X-INDEPENDENT-SEGMENTS");
    expect(shortLater.split("\n")).toContain("#EXT-X-INDEPENDENT-SEGMENTS");

    // Why: the long GOP's segments (2 s at most) are cut between its 5 s keyframes; the short one's never are.
    expect(longStarts.starts).toContain(false);
    expect(shortStarts.starts.every(Boolean)).toBe(true);
    longGop = { ...long, variant: variant(longFirst) };
  }, 60_000);

  it("a clip of the 5 s GOP stream starting in a segment cut between keyframes starts at the keyframe before: its video covers all it was asked for", async () => {
    // One followed by another: the clip window has it by then (it keeps its copy a moment after the playlist lists it).
    const cut = await waitFor("a segment cut between keyframes, not the newest", async () => {
      const { segments } = await segmentStarts(longGop.playbackId, longGop.variant, 5);
      return segments.slice(0, -1).filter((x) => x.keyed === false).at(-1);
    }, 20_000, 250);
    const startTime = cut.start + 200;
    const created = await api("POST", "/clip", { playbackId: longGop.playbackId, startTime, endTime: Date.now() });
    expect(created.status).toBe(200);
    const { source, id } = created.body.asset;
    // Back past the segment asked from, to one that starts on a keyframe.
    expect(source.startTime).toBeLessThan(cut.start - 100);
    const ready = await waitFor("the clip ready", async () => {
      const a = (await api("GET", `/asset/${id}`)).body;
      if (a.status.phase === "failed") throw new Error(a.status.errorMessage);
      return a.status.phase === "ready" ? a : undefined;
    }, 30_000, 250);
    // ffmpeg's copy drops video before the first keyframe: a cut starting between keyframes
    // would leave the video shorter than the range, by up to a GOP.
    const { stdout } = await promisify(execFile)(FFPROBE, ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=duration", "-of", "csv=p=0", ready.downloadUrl]);
    expect(Number(stdout.trim())).toBeGreaterThan((source.endTime - source.startTime) / 1000 - 0.2);
    expect(Number(stdout.trim())).toBeGreaterThanOrEqual((source.endTime - startTime) / 1000 - 0.1);
  }, 60_000);
});
