import { buildClipArgs, dateSegments, describeAvailable, parseTimedPlaylist, planClip, progressSeconds, renderBufferPlaylist, sourcePlaylist, trimWindow, type TimedSegment } from "../../../src/assets";

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();

/** A live playlist as the packager writes it to disk: dated segments of 2 s. */
function livePlaylist(count: number, seconds = 2): string {
  const lines = ["#EXTM3U", "#EXT-X-VERSION:9", "#EXT-X-TARGETDURATION:2", "#EXT-X-MEDIA-SEQUENCE:100", '#EXT-X-MAP:URI="abcd1234_init0.mp4"'];
  for (let i = 0; i < count; i++) lines.push(`#EXT-X-PROGRAM-DATE-TIME:${iso(T0 + i * seconds * 1000)}`, `#EXTINF:${seconds.toFixed(5)},`, `abcd1234_${100 + i}.m4s`);
  return lines.join("\n") + "\n";
}

const dated = (count: number) => parseTimedPlaylist(livePlaylist(count)) as Required<TimedSegment>[];

describe("parseTimedPlaylist", () => {
  it("reads dates, maps and seams", () => {
    const text = livePlaylist(2) + '#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI="abcd1234_init1.mp4"\n#EXTINF:1.5,\nabcd1234_102.m4s\n';
    expect(parseTimedPlaylist(text)).toEqual([
      { uri: "abcd1234_100.m4s", duration: 2, map: "abcd1234_init0.mp4", discontinuity: false, programDateTime: T0 },
      { uri: "abcd1234_101.m4s", duration: 2, map: "abcd1234_init0.mp4", discontinuity: false, programDateTime: T0 + 2000 },
      { uri: "abcd1234_102.m4s", duration: 1.5, map: "abcd1234_init1.mp4", discontinuity: true },
    ]);
  });

  it("skips segments without an init segment (not fragmented MP4: nothing onair writes)", () => {
    expect(parseTimedPlaylist("#EXTM3U\n#EXTINF:2,\na.ts\n")).toEqual([]);
  });
});

describe("dateSegments", () => {
  const undated = parseTimedPlaylist(livePlaylist(4).replace(/#EXT-X-PROGRAM-DATE-TIME:.*\n/g, ""));

  it.each([
    ["no date anywhere: from the fallback", new Map<string, number>(), [5000, 7000, 9000, 11000]],
    ["one known date in the middle: before and after from it", new Map([["abcd1234_102.m4s", 50_000]]), [46_000, 48_000, 50_000, 52_000]],
    ["two known dates: each kept (a gap of a reconnect)", new Map([["abcd1234_100.m4s", 10_000], ["abcd1234_103.m4s", 30_000]]), [10_000, 12_000, 14_000, 30_000]],
  ])("%s", (_case, known, starts) => {
    expect(dateSegments(undated, 5000, known).map((s) => s.programDateTime)).toEqual(starts);
  });
});

describe("planClip", () => {
  it.each([
    // [case, start offset ms, end offset ms, first segment index, last segment index, seconds]
    ["on segment bounds", 2000, 6000, 1, 2, 4],
    ["mid-GOP start: from the keyframe before it, at most one GOP longer", 3000, 13_000, 1, 6, 11],
    ["end inside a segment: cut there", 0, 5000, 0, 2, 5],
    ["the whole window", 0, 20_000, 0, 9, 20],
  ])("%s", (_case, start, end, first, last, seconds) => {
    const segments = dated(10);
    const r = planClip(segments, T0 + start, T0 + end);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.plan.segments.map((s) => s.uri)).toEqual(segments.slice(first, last + 1).map((s) => s.uri));
    expect(r.plan.durationSeconds).toBeCloseTo(seconds, 3);
  });

  it.each([
    ["starts before the window", -1000, 4000],
    ["ends after the window", 18_000, 21_000],
    ["lies wholly after it", 60_000, 70_000],
  ])("refuses a range that %s, saying what there is", (_case, start, end) => {
    expect(planClip(dated(10), T0 + start, T0 + end)).toEqual({ ok: false, available: { from: T0, to: T0 + 20_000 } });
  });

  it("refuses anything of an empty window", () => {
    expect(planClip([], T0, T0 + 1000)).toEqual({ ok: false, available: undefined });
  });

  it.each([
    // A GOP longer than the 2 s segments: only segments 3, 5 and 8 start on a keyframe.
    ["from the last segment on a keyframe at or before the start", 9000, 11_000, 3, 5, 5],
    ["a start on a keyed segment stays there", 10_000, 12_000, 5, 5, 2],
    ["none keyed at or before it: the window's oldest, the best there is", 3000, 5000, 0, 2, 5],
  ])("segments cut between keyframes (a long-GOP passthrough source): %s", (_case, start, end, first, last, seconds) => {
    const segments = dated(10);
    const keyed = new Set([3, 5, 8].map((i) => segments[i]!.uri));
    const r = planClip(segments, T0 + start, T0 + end, (s) => keyed.has(s.uri));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.plan.segments.map((s) => s.uri)).toEqual(segments.slice(first, last + 1).map((s) => s.uri));
    expect(r.plan.durationSeconds).toBeCloseTo(seconds, 3);
  });
});

describe("buildClipArgs", () => {
  it("copies both outputs from one bounded read: MP4 with faststart, fMP4 HLS", () => {
    const args = buildClipArgs({ playlist: "/w/source/index.m3u8", durationSeconds: 10.5, mp4: "/w/out/video.mp4.tmp", hlsDir: "/w/out", hlsSegmentSeconds: 2 }).join(" ");
    expect(args).toBe(
      "-hide_banner -nostdin -loglevel error -progress pipe:1 -nostats -protocol_whitelist file -t 10.500 -i /w/source/index.m3u8 " +
        "-map 0:v? -map 0:a? -c copy -movflags +faststart -f mp4 -y /w/out/video.mp4.tmp " +
        "-map 0:v? -map 0:a? -c copy -f hls -hls_time 2 -hls_playlist_type vod -hls_list_size 0 -hls_segment_type fmp4 -hls_fmp4_init_filename init.mp4 -hls_segment_filename /w/out/seg_%03d.m4s -y /w/out/index.m3u8",
    );
  });

  it.each([
    ["out_time_us=2500000", 2.5],
    ["out_time_us=0", 0],
    ["out_time=00:00:02.500000", undefined],
    ["progress=end", undefined],
  ])("progressSeconds(%s)", (line, seconds) => {
    expect(progressSeconds(line)).toBe(seconds);
  });
});

describe("sourcePlaylist", () => {
  it("lists the chosen segments as VOD, with their inits and seams", () => {
    const text = sourcePlaylist([
      { uri: "a_1.m4s", duration: 2, map: "a_init0.mp4", discontinuity: true },
      { uri: "a_2.m4s", duration: 1.5, map: "a_init0.mp4", discontinuity: false },
      { uri: "a_3.m4s", duration: 2, map: "a_init1.mp4", discontinuity: true },
    ]);
    expect(text).toBe(
      [
        "#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:2", "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-PLAYLIST-TYPE:VOD",
        '#EXT-X-MAP:URI="a_init0.mp4"', "#EXTINF:2.000000,", "a_1.m4s", "#EXTINF:1.500000,", "a_2.m4s",
        "#EXT-X-DISCONTINUITY", '#EXT-X-MAP:URI="a_init1.mp4"', "#EXTINF:2.000000,", "a_3.m4s", "#EXT-X-ENDLIST",
      ].join("\n") + "\n",
    );
  });
});

describe("describeAvailable", () => {
  it("names each source's range as ISO times and ms", () => {
    expect(describeAvailable([{ kind: "live", from: T0, to: T0 + 2000 }])).toBe(`the live window holds ${iso(T0)} to ${iso(T0 + 2000)} (startTime ${T0} to endTime ${T0 + 2000})`);
    expect(describeAvailable([])).toMatch(/nothing of this session is available/);
  });
});

describe("the live clip window", () => {
  it.each([
    // [case, window seconds, segments kept (of ten 2 s segments)]
    ["a window longer than the session keeps all", 60, 10],
    ["a window of 6 s keeps the last three", 6, 3],
    ["a window between segments keeps the one it cuts into", 5, 3],
    ["a zero window keeps none", 0, 0],
  ])("trimWindow: %s", (_case, seconds, kept) => {
    const segments = dated(10);
    const r = trimWindow(segments, seconds);
    expect(r.kept).toEqual(segments.slice(10 - kept));
    expect(r.dropped).toEqual(segments.slice(0, 10 - kept));
  });

  it("its playlist reads back as written: dates, inits and seams", () => {
    const segments = [
      ...dated(2),
      { uri: "abcd1234_102.m4s", duration: 1.5, map: "abcd1234_init1.mp4", discontinuity: true, programDateTime: T0 + 9000 },
    ];
    expect(parseTimedPlaylist(renderBufferPlaylist(segments))).toEqual(segments);
  });
});
