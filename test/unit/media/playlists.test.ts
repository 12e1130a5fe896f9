import { buildMasterPlaylist, parseMediaPlaylist, withEndlist } from "../../../src/media/playlists";
import { buildVodPlaylist } from "../../../src/recordings/vod";
import { keepDiscontinuities } from "../../../src/recordings/finalize";

describe("playlists", () => {
  const live = "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:7\n#EXTINF:2.000000,\na_00007.ts\n#EXTINF:1.5,\na_00008.ts\n";

  it("parses segments with their sequence numbers", () => {
    expect(parseMediaPlaylist(live)).toEqual({
      mediaSequence: 7,
      ended: false,
      segments: [
        { uri: "a_00007.ts", duration: 2, seq: 7 },
        { uri: "a_00008.ts", duration: 1.5, seq: 8 },
      ],
    });
    expect(parseMediaPlaylist(withEndlist(live)).ended).toBe(true);
    expect(parseMediaPlaylist("")).toEqual({ mediaSequence: 0, ended: false, segments: [] });
  });

  it("marks the segment after a discontinuity, and a recording's playlist keeps the mark", () => {
    const seam = live + "#EXT-X-DISCONTINUITY\n#EXTINF:2.0,\nar1_00009.ts\n#EXTINF:2.0,\nar1_00010.ts\n";
    const { segments } = parseMediaPlaylist(seam);
    expect(segments.map((x) => x.discontinuity === true)).toEqual([false, false, true, false]);
    const vod = buildVodPlaylist(segments, true);
    expect(vod).toContain("a_00008.ts\n#EXT-X-DISCONTINUITY\n#EXTINF:2.000000,\nar1_00009.ts\n#EXTINF");
    expect(parseMediaPlaylist(vod).segments).toEqual(segments.map((x) => ({ ...x, seq: x.seq - 7 })));
  });

  it("a seam's mark survives the loss of the segment that carried it", () => {
    const segs = [{ uri: "a" }, { uri: "b", discontinuity: true }, { uri: "c" }, { uri: "d" }];
    expect(keepDiscontinuities(segs, (x) => x.uri !== "b")).toEqual([{ uri: "a" }, { uri: "c", discontinuity: true }, { uri: "d" }]);
    expect(keepDiscontinuities(segs, () => true)).toEqual(segs);
    expect(keepDiscontinuities(segs, (x) => x.uri === "a")).toEqual([{ uri: "a" }]);
  });

  it("ends a playlist once", () => {
    const ended = withEndlist(live);
    expect(ended.endsWith("a_00008.ts\n#EXT-X-ENDLIST\n")).toBe(true);
    expect(withEndlist(ended)).toBe(ended);
  });

  it("builds a master playlist, highest bandwidth first", () => {
    const text = buildMasterPlaylist([
      { uri: "1/index.m3u8", name: "360p", bandwidth: 900_000.4, width: 640, height: 360, codecs: ["avc1.64001e", "mp4a.40.2"], frameRate: 30 },
      { uri: "0/index.m3u8", name: "720p", bandwidth: 3_100_000, width: 1280, height: 720, codecs: ["avc1.64001f", "mp4a.40.2"], frameRate: 30 },
    ]);
    expect(text).toBe(
      "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-INDEPENDENT-SEGMENTS\n" +
        '#EXT-X-STREAM-INF:BANDWIDTH=3100000,RESOLUTION=1280x720,CODECS="avc1.64001f,mp4a.40.2",FRAME-RATE=30.000,NAME="720p"\n0/index.m3u8\n' +
        '#EXT-X-STREAM-INF:BANDWIDTH=900000,RESOLUTION=640x360,CODECS="avc1.64001e,mp4a.40.2",FRAME-RATE=30.000,NAME="360p"\n1/index.m3u8\n',
    );
  });

  it("never lets a name out of its quoted NAME attribute (names stored before they were checked)", () => {
    const text = buildMasterPlaylist([{ uri: "0/index.m3u8", name: '720p"\n#EXT-X-STREAM-INF:BANDWIDTH=99999999\n/etc/hosts', bandwidth: 1 }]);
    expect(text.split("\n")).toEqual([
      "#EXTM3U",
      "#EXT-X-VERSION:6",
      "#EXT-X-INDEPENDENT-SEGMENTS",
      '#EXT-X-STREAM-INF:BANDWIDTH=1,NAME="720p___EXT-X-STREAM-INF_BANDWIDTH_99999999__etc_hosts"',
      "0/index.m3u8",
      "",
    ]);
  });
});
