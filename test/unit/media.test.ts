import { even, loadLadder, renditionLadder } from "../../src/media/ladder";
import { buildLiveArgs } from "../../src/media/liveArgs";
import { buildMasterPlaylist, parseMediaPlaylist, withEndlist } from "../../src/media/playlists";
import { buildVodPlaylist } from "../../src/recordings/vod";
import { keepDiscontinuities } from "../../src/recordings/finalize";
import { streamKeyFromPath } from "../../src/ingest";

const P = (name: string, width: number, height: number, fps = 30, bitrate = 1_000_000) => ({ name, width, height, fps, bitrate });

describe("renditionLadder", () => {
  it("no profiles: one passthrough rendition", () => {
    expect(renditionLadder([], 2)).toEqual([{ index: 0, name: "source", encode: null }]);
  });

  it("one rendition per profile, even sizes, a GOP of one segment", () => {
    const r = renditionLadder([P("720p", 1280, 720), P("odd", 853, 481, 25, 500_000)], 2);
    expect(r.map((x) => x.name)).toEqual(["720p", "odd"]);
    expect(r[0]!.encode).toEqual({ width: 1280, height: 720, fps: 30, bitrate: 1_000_000, gopFrames: 60 });
    expect(r[1]!.encode).toEqual({ width: 852, height: 480, fps: 25, bitrate: 500_000, gopFrames: 50 });
    expect(even(1)).toBe(2);
  });

  it("the default ladder is 720p, 480p, 360p", () => {
    expect(loadLadder("default").map((p) => [p.name, p.width, p.height])).toEqual([
      ["720p", 1280, 720],
      ["480p", 854, 480],
      ["360p", 640, 360],
    ]);
    expect(() => loadLadder("../etc/passwd")).toThrow(/invalid ladder name/);
  });
});

describe("buildLiveArgs", () => {
  const base = { inputUrl: "rtmp://127.0.0.1:1935/live/k", segmentSeconds: 1, fragmentMicros: 200_000, audioBitrate: 128000 };
  const FMP4 = "-video_track_timescale 90000 -f mp4 -movflags +frag_keyframe+empty_moov+default_base_moof+skip_trailer+cmaf";

  it("passthrough copies the source into one fragmented MP4 on fd 3, audio optional", () => {
    const args = buildLiveArgs({ ...base, renditions: renditionLadder([], 1) });
    expect(args).not.toContain("-filter_complex");
    expect(args.join(" ")).toContain(`-i rtmp://127.0.0.1:1935/live/k -map 0:v:0 -map 0:a:0? -c copy ${FMP4} -frag_duration 200000 pipe:3`);
    expect(args).not.toContain("libx264");
    expect(args.slice(0, 7)).toEqual(["-hide_banner", "-nostdin", "-nostats", "-loglevel", "info", "-progress", "pipe:1"]);
  });

  it("decodes once, snaps to the top frame rate, splits into every profile with aligned keyframes, one pipe each", () => {
    const args = buildLiveArgs({ ...base, segmentSeconds: 2, renditions: renditionLadder([P("720p", 1280, 720, 30, 3_000_000), P("360p", 640, 360, 15, 800_000)], 2) });
    expect(args.filter((a) => a === "-i")).toHaveLength(1);
    const graph = args[args.indexOf("-filter_complex") + 1]!;
    // One fps before the split: the half-rate rendition keeps every other frame of an exact grid.
    expect(graph).toBe(
      "[0:v:0]fps=30,split=2[s0][s1];" +
        "[s0]scale=w=1280:h=720:force_original_aspect_ratio=decrease,pad=1280:720:(ow-iw)/2:(oh-ih)/2,setsar=1[o0];" +
        "[s1]fps=15,scale=w=640:h=360:force_original_aspect_ratio=decrease,pad=640:360:(ow-iw)/2:(oh-ih)/2,setsar=1[o1]",
    );
    const text = args.join(" ");
    expect(text).toContain("-map [o0] -map 0:a:0? -c:v libx264 -preset veryfast -tune zerolatency");
    expect(text).toContain("-b:v 3000000 -maxrate 3000000 -bufsize 6000000 -g 60 -keyint_min 60 -sc_threshold 0 -force_key_frames expr:gte(t,n_forced*2)");
    expect(text).toContain("-b:v 800000 -maxrate 800000 -bufsize 1600000 -g 30 -keyint_min 30");
    expect(text).toContain("-c:a aac -b:a 128000");
    expect(args.filter((a) => a === "-f").length).toBe(2);
    expect(text).toContain(`${FMP4} -frag_duration 200000 pipe:3`);
    expect(text).toContain(`${FMP4} -frag_duration 200000 pipe:4`);
  });

  it("an ffmpeg without -movflags cmaf is not asked for it", () => {
    const args = buildLiveArgs({ ...base, cmaf: false, renditions: renditionLadder([], 1) });
    expect(args).toContain("+frag_keyframe+empty_moov+default_base_moof+skip_trailer");
  });

  it("without parts, one fragment per keyframe interval", () => {
    const args = buildLiveArgs({ ...base, fragmentMicros: undefined, renditions: renditionLadder([P("360p", 640, 360)], 2) });
    expect(args).not.toContain("-frag_duration");
    expect(args.slice(-1)).toEqual(["pipe:3"]);
  });
});

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

describe("streamKeyFromPath", () => {
  it.each([
    ["/live/abcd-efgh-ijkl-mnop", "abcd-efgh-ijkl-mnop"],
    ["/other/abcd", undefined],
    ["/live/", undefined],
    ["/live/a/b", undefined],
  ])("%s → %s", (p, key) => expect(streamKeyFromPath(p)).toBe(key));
});
