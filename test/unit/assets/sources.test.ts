import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { readLiveWindow, type SourcePaths } from "../../../src/assets/sources";

// Where a clip of a live (or just ended) session is cut from: the clip buffer or the live
// playlist's folder (which holds the stream's DVR window), whichever reaches further back.

const SESSION = "5e551011-aaaa-bbbb-cccc-000000000001";
const PREFIX = SESSION.slice(0, 8);
const T0 = Date.parse("2026-11-28T05:00:00Z");

let root: string;
let paths: SourcePaths;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "onair-sources-"));
  paths = { hlsDir: path.join(root, "hls"), recordingsDir: path.join(root, "recordings"), recordings: undefined as never, liveBufferDir: path.join(root, "live") };
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** A dated playlist of `count` 2 s segments from MSN `first`, named with `prefix`, written in `dir`. */
function playlist(dir: string, prefix: string, first: number, count: number): void {
  fs.mkdirSync(dir, { recursive: true });
  const lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:2", `#EXT-X-MEDIA-SEQUENCE:${first}`, `#EXT-X-MAP:URI="${prefix}_init0.mp4"`];
  for (let msn = first; msn < first + count; msn++) {
    lines.push(`#EXT-X-PROGRAM-DATE-TIME:${new Date(T0 + (msn - 1) * 2000).toISOString()}`, "#EXTINF:2.000000,", `${prefix}_${msn}.m4s`);
  }
  fs.writeFileSync(path.join(dir, "index.m3u8"), lines.join("\n") + "\n");
}

const bufferDir = () => path.join(paths.liveBufferDir!, SESSION);
const hlsDir = () => path.join(paths.hlsDir, "pb1", "0");

describe("readLiveWindow", () => {
  it("takes the live folder when it reaches further back than the clip buffer (a DVR window)", () => {
    playlist(bufferDir(), PREFIX, 51, 10);
    playlist(hlsDir(), PREFIX, 1, 60);
    const w = readLiveWindow(paths, "pb1", SESSION)!;
    expect(w.dir).toBe(hlsDir());
    expect(w.segments[0]!.programDateTime).toBe(T0);
    expect(w.segments).toHaveLength(60);
  });

  it("takes the clip buffer when it reaches further back than the live playlist (no DVR)", () => {
    playlist(bufferDir(), PREFIX, 1, 60);
    playlist(hlsDir(), PREFIX, 58, 3);
    expect(readLiveWindow(paths, "pb1", SESSION)!.dir).toBe(bufferDir());
  });

  it("never takes another session's media, and finds nothing without a playlist", () => {
    playlist(hlsDir(), "0ther5e5", 1, 60);
    expect(readLiveWindow(paths, "pb1", SESSION)).toBeUndefined();
    playlist(bufferDir(), PREFIX, 40, 5);
    expect(readLiveWindow(paths, "pb1", SESSION)!.dir).toBe(bufferDir());
    expect(readLiveWindow(paths, "pb2", "00000000-0000-0000-0000-000000000000")).toBeUndefined();
  });
});
