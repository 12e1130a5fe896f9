import fs from "node:fs";
import path from "node:path";
import { renditionLadder } from "../../src/media";
import { closePlaylists, listsExactly } from "../../src/recordings/finalize";
import { bestRendition, buildMp4RemuxArgs } from "../../src/recordings/vod";
import { tempDir } from "../helpers/server";

// Finalize reads the recording's folders from the session's renditions, never file names from
// playlist text: a master playlist once carried user-chosen profile names, and a crafted one
// pointed the MP4 remux at /etc/hosts. Real files in a temporary folder.

const PROFILES = [
  { name: "720p", bitrate: 3_000_000, fps: 30, width: 1280, height: 720 },
  { name: "360p", bitrate: 800_000, fps: 30, width: 640, height: 360 },
];

let dir: string;
beforeEach(() => (dir = tempDir("onair-finalize-")));
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A rendition folder with segments of `bytes` each (2 s), listed in its playlist with `extra` uris. */
function rendition(index: number, bytes: number, extra: string[] = []): void {
  const folder = path.join(dir, String(index));
  fs.mkdirSync(folder, { recursive: true });
  const uris = ["abcd1234_00000.ts", "abcd1234_00001.ts"];
  for (const u of uris) fs.writeFileSync(path.join(folder, u), Buffer.alloc(bytes));
  const lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:2", "#EXT-X-MEDIA-SEQUENCE:0"];
  for (const u of [...uris, ...extra]) lines.push("#EXTINF:2.000000,", u);
  fs.writeFileSync(path.join(folder, "index.m3u8"), lines.join("\n") + "\n");
}

it("remuxes the session's best rendition, and rewrites a master playlist that lists anything else", () => {
  rendition(0, 50_000);
  rendition(1, 10_000);
  // What a crafted profile name used to leave in the live master playlist, copied into the recording.
  const crafted = [
    "#EXTM3U",
    '#EXT-X-STREAM-INF:BANDWIDTH=200000,NAME="360p"',
    "1/index.m3u8",
    '#EXT-X-STREAM-INF:BANDWIDTH=100,NAME="x"',
    "#EXT-X-STREAM-INF:BANDWIDTH=999999999",
    "/etc/hosts",
    '#EXT-X-STREAM-INF:BANDWIDTH=100000,NAME="720p"',
    "0/index.m3u8",
  ].join("\n");
  fs.writeFileSync(path.join(dir, "index.m3u8"), crafted);

  const recorded = closePlaylists(dir, renditionLadder(PROFILES, 2));
  const best = bestRendition(recorded)!;
  expect(best.rendition).toMatchObject({ index: 0, name: "720p" });
  const master = fs.readFileSync(path.join(dir, "index.m3u8"), "utf8");
  expect(master).not.toContain("/etc/hosts");
  expect(master).toContain('NAME="720p"');
  expect(listsExactly(master, ["0/index.m3u8", "1/index.m3u8"])).toBe(true);
  // The remux reads only local files, from the rendition's own folder.
  const args = buildMp4RemuxArgs(path.join(dir, String(best.rendition.index), "index.m3u8"), path.join(dir, "output.mp4"));
  expect(args.slice(args.indexOf("-protocol_whitelist"), args.indexOf("-protocol_whitelist") + 2)).toEqual(["-protocol_whitelist", "file"]);
});

it("drops playlist entries that are not plain segment file names of the rendition's folder", () => {
  rendition(0, 20_000, ["../../../etc/hosts", "/etc/hosts", "file:/etc/hosts", ".hidden.ts"]);
  fs.writeFileSync(path.join(dir, ".hidden.ts"), "x");
  closePlaylists(dir, renditionLadder([], 2));
  const vod = fs.readFileSync(path.join(dir, "0", "index.m3u8"), "utf8");
  expect(vod.split("\n").filter((l) => l && !l.startsWith("#"))).toEqual(["abcd1234_00000.ts", "abcd1234_00001.ts"]);
});

it("keeps a master playlist that lists exactly the recorded renditions, and ignores folders the session never had", () => {
  rendition(0, 20_000);
  rendition(7, 90_000);
  const live = '#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-STREAM-INF:BANDWIDTH=1000,CODECS="avc1.64001f",NAME="source"\n0/index.m3u8\n';
  fs.writeFileSync(path.join(dir, "index.m3u8"), live);
  const recorded = closePlaylists(dir, renditionLadder([], 2));
  expect(recorded.map((r) => r.rendition.index)).toEqual([0]);
  expect(fs.readFileSync(path.join(dir, "index.m3u8"), "utf8")).toBe(live);
});
