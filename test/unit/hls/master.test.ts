import { buildMasterPlaylist } from "../../../src/hls";

const variants = [
  { uri: "1/index.m3u8", name: "360p", bandwidth: 800_000 },
  { uri: "0/index.m3u8", name: "720p", bandwidth: 2_500_000 },
];

describe("buildMasterPlaylist", () => {
  it("claims EXT-X-INDEPENDENT-SEGMENTS only when every segment starts on a keyframe", () => {
    expect(buildMasterPlaylist(variants, { independentSegments: true }).split("\n")).toContain("#EXT-X-INDEPENDENT-SEGMENTS");
    expect(buildMasterPlaylist(variants, { independentSegments: false })).not.toContain("INDEPENDENT-SEGMENTS");
  });

  it("lists the highest bandwidth first either way", () => {
    const lines = buildMasterPlaylist(variants, { independentSegments: false }).trim().split("\n");
    expect(lines).toEqual(["#EXTM3U", "#EXT-X-VERSION:6", '#EXT-X-STREAM-INF:BANDWIDTH=2500000,NAME="720p"', "0/index.m3u8", '#EXT-X-STREAM-INF:BANDWIDTH=800000,NAME="360p"', "1/index.m3u8"]);
  });
});
