import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { LiveStoryboard, SPRITE_KEEP_MS } from "../../../src/assets/liveStoryboard";
import { createLogger } from "../../../src/log";
import { ProcessRegistry } from "../../../src/media";
import type { LiveSessionInfo, WrittenSegment } from "../../../src/sessions";
import { waitFor } from "../../helpers/media";

// LiveStoryboard's bookkeeping around its ffmpegs, with a stand-in ffmpeg that waits for the
// test to let it finish: one tile at a time, one sprite build per board and per node, builds
// killed at the session's end, the VTT naming the very sprite drawn from its tiles, tiles kept
// while a build reads them, and ended boards dropped.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-storyboard-unit-"));
const log = path.join(dir, "ffmpeg.log");
const gates = path.join(dir, "gates");
// SOI, an APP0 of 4 bytes, then SOF0 (height 90, width 160): all jpegSize reads.
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x5a, 0x00, 0xa0, 0x03]);
const fixture = path.join(dir, "tile.jpg");
const ffmpeg = path.join(dir, "ffmpeg");
// A tile's run reads its stdin and copies the fixture; a sprite's checks that every tile its list
// names is still there. Each waits for its gate file, and logs its start and end.
const script = `#!/bin/sh
for a; do out="$a"; done
case "$*" in *concat*) kind=sprite ;; *) kind=tile ;; esac
echo "start $kind" >> '${log}'
while [ ! -e '${gates}'/$kind ]; do sleep 0.02; done
if [ $kind = tile ]; then cat > /dev/null; else
  list=$(echo "$*" | sed 's/.* -i \\([^ ]*\\) .*/\\1/')
  for f in $(sed -n "s/^file '\\(.*\\)'$/\\1/p" "$list"); do [ -e "$f" ] || { echo "missing $f" >> '${log}'; exit 1; }; done
fi
cp '${fixture}' "$out"
echo "end $kind" >> '${log}'
`;

beforeAll(() => {
  fs.writeFileSync(fixture, JPEG);
  fs.writeFileSync(ffmpeg, script, { mode: 0o755 });
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const lines = () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : []);
const count = (line: string) => lines().filter((l) => l === line).length;
const open = (kind: "tile" | "sprite") => fs.writeFileSync(path.join(gates, kind), "");
const close = (kind: "tile" | "sprite") => fs.rmSync(path.join(gates, kind), { force: true });

let now = Date.parse("2026-01-01T00:00:00Z");
let registry: ProcessRegistry;
let board: LiveStoryboard;
let hlsDir: string;
let n = 0;
/** Each tile's taking, from the segment to the tile in the list (a stopped ffmpeg is not yet a listed tile). */
let taken: Promise<void>[];
beforeEach(() => {
  fs.rmSync(log, { force: true });
  fs.rmSync(gates, { recursive: true, force: true });
  fs.mkdirSync(gates);
  hlsDir = fs.mkdtempSync(path.join(dir, "hls-"));
  registry = new ProcessRegistry();
  board = new LiveStoryboard({ hlsDir, registry, ffmpegPath: ffmpeg, now: () => now });
  taken = [];
  const spied = board as unknown as { take(...a: unknown[]): Promise<void> };
  const take = spied.take.bind(board);
  spied.take = (...a) => {
    const p = take(...a);
    taken.push(p);
    return p;
  };
});
afterEach(async () => {
  open("tile");
  open("sprite");
  await waitFor("no ffmpeg left", () => registry.size === 0);
});

const session = (playbackId: string, dvrSeconds = 60): LiveSessionInfo => ({ playbackId, sessionId: `${playbackId}-${++n}`, dvrSeconds, log: createLogger("silent") }) as unknown as LiveSessionInfo;
const T0 = Date.parse("2026-01-01T00:00:00Z");
function segment(seq: number, atSeconds: number): WrittenSegment {
  const file = path.join(dir, "segment.m4s");
  fs.writeFileSync(file, "media");
  return { rendition: { index: 0 }, file, map: { file, uri: "init.mp4" }, seq, uri: `${seq}.m4s`, duration: 1, bytes: 5, run: 0, programDateTime: T0 + atSeconds * 1000 } as unknown as WrittenSegment;
}
/** Writes a segment that takes a tile, lets the tile's ffmpeg finish, and waits for the tile. */
async function tile(info: LiveSessionInfo, seq: number, atSeconds: number): Promise<void> {
  const takes = taken.length;
  open("tile");
  board.segmentWritten(info, segment(seq, atSeconds));
  expect(taken.length).toBe(takes + 1);
  await taken[takes];
  close("tile");
}
const spriteOf = (vtt: string) => /\n(storyboard\.jpg\?v=([0-9a-z]+))#xywh/.exec(vtt)!;
const url = (id: string) => `storyboard.jpg?v=${id}`;

test("one tile ffmpeg at a time, even for segments written back to back", async () => {
  const info = session("a000000000000001");
  board.sessionLive(info);
  board.segmentWritten(info, segment(1, 0));
  board.segmentWritten(info, segment(2, 6));
  await waitFor("a tile's ffmpeg", () => count("start tile") >= 1);
  open("tile");
  open("sprite");
  await waitFor("the first tile in the VTT", () => board.vtt(info.playbackId, url));
  expect(count("start tile")).toBe(1);
});

test("the VTT names the sprite drawn from its tiles, which is still served after a newer one", async () => {
  const info = session("a000000000000002");
  board.sessionLive(info);
  await tile(info, 1, 0);
  open("sprite");
  const first = (await board.vtt(info.playbackId, url))!;
  expect(first.match(/-->/g)).toHaveLength(1);
  const [, , id1] = spriteOf(first);
  await tile(info, 6, 5);
  const second = (await board.vtt(info.playbackId, url))!;
  expect(second.match(/-->/g)).toHaveLength(2);
  const [, , id2] = spriteOf(second);
  expect(id2).not.toBe(id1);
  // Each build its own file: the first is still there, and served by its id.
  const old = (await board.sprite(info.playbackId, id1))!;
  expect(old).not.toBe(await board.sprite(info.playbackId, id2));
  expect(fs.existsSync(old)).toBe(true);
  expect(count("start sprite")).toBe(2);
  // Past SPRITE_KEEP_MS after it was replaced, the next build deletes it.
  now += SPRITE_KEEP_MS + 1;
  await tile(info, 11, 10);
  await board.vtt(info.playbackId, url);
  expect(await board.sprite(info.playbackId, id1)).toBeUndefined();
  await waitFor("its file deleted", () => !fs.existsSync(old));
});

test("one build per board for viewers asking at once, one per node across boards", async () => {
  const a = session("a000000000000003");
  const b = session("a000000000000004");
  board.sessionLive(a);
  board.sessionLive(b);
  await tile(a, 1, 0);
  await tile(b, 1, 0);
  const asked = [board.vtt(a.playbackId, url), board.sprite(a.playbackId), board.vtt(b.playbackId, url)];
  await waitFor("a sprite's ffmpeg", () => count("start sprite") === 1);
  open("sprite");
  const [vttA, fileA, vttB] = await Promise.all(asked);
  expect(lines().filter((l) => l.endsWith("sprite"))).toEqual(["start sprite", "end sprite", "start sprite", "end sprite"]);
  expect(await board.sprite(a.playbackId, spriteOf(vttA!)[2])).toBe(fileA);
  expect(spriteOf(vttB!)[2]).not.toBe(spriteOf(vttA!)[2]);
});

test("a sprite build is killed at the session's end", async () => {
  const info = session("a000000000000005");
  board.sessionLive(info);
  await tile(info, 1, 0);
  const asked = board.vtt(info.playbackId, url);
  await waitFor("a sprite's ffmpeg", () => count("start sprite") === 1);
  board.sessionEnded(info);
  expect(await asked).toBeUndefined();
  expect(registry.size).toBe(0);
  expect(count("end sprite")).toBe(0);
});

test("tiles trimmed during a build stay until it is done", async () => {
  const info = session("a000000000000006", 8);
  board.sessionLive(info);
  await tile(info, 1, 0);
  await tile(info, 6, 5);
  const asked = board.vtt(info.playbackId, url);
  await waitFor("a sprite's ffmpeg", () => count("start sprite") === 1);
  // The window moves past the first tile while its sprite is being built.
  board.segmentWritten(info, segment(15, 14));
  const first = path.join(hlsDir, info.playbackId, "storyboard", "1.jpg");
  expect(fs.existsSync(first)).toBe(true);
  open("sprite");
  expect(await asked).toContain("-->");
  expect(lines().filter((l) => l.startsWith("missing"))).toEqual([]);
  await waitFor("the trimmed tile deleted once built", () => !fs.existsSync(first));
});

test("cues never go back when the clock does", async () => {
  const info = session("a000000000000007");
  board.sessionLive(info);
  await tile(info, 1, 60);
  await tile(info, 2, 0);
  open("sprite");
  const starts = [...(await board.vtt(info.playbackId, url))!.matchAll(/^(\S+) -->/gm)].map((m) => m[1]);
  expect(starts).toEqual(["00:00:00.000", "00:00:00.000"]);
});

test("an ended board is dropped after its window, and the oldest when too many have ended", async () => {
  const short = session("a000000000000008", 0.2);
  board.sessionLive(short);
  await tile(short, 1, 0);
  board.sessionEnded(short);
  const folder = path.join(hlsDir, short.playbackId, "storyboard");
  expect(fs.existsSync(folder)).toBe(true);
  await waitFor("the ended board dropped", () => !fs.existsSync(folder));
  expect(await board.vtt(short.playbackId, url)).toBeUndefined();

  const many = Array.from({ length: 51 }, (_, i) => session(`b${String(i).padStart(15, "0")}`));
  for (const info of many) board.sessionLive(info);
  for (const info of many) board.sessionEnded(info);
  const kept = many.filter((info) => fs.existsSync(path.join(hlsDir, info.playbackId, "storyboard")));
  expect(kept.map((i) => i.playbackId)).toEqual(many.slice(1).map((i) => i.playbackId));
});
