import { canSkipUntilFor, renderMediaPlaylist, skippedSegments, withoutDeltaUpdates, type PlaylistSource } from "../../../src/hls/playlist";
import type { HlsSegment } from "../../../src/hls/track";

// Delta updates (RFC 8216bis §6.2.5.1): which of a long playlist's oldest segments one skips.

describe("skippedSegments", () => {
  it.each([
    ["nothing listed", [], 12, 0],
    ["shorter than the boundary", [2, 2, 2], 12, 0],
    ["exactly the boundary: nothing before it", [2, 2, 2, 2, 2, 2], 12, 0],
    ["one segment before the boundary", [2, 2, 2, 2, 2, 2, 2], 12, 1],
    ["a segment across the boundary stays", [2, 2, 2, 2, 2, 1.5, 2], 12, 0],
    ["many before it", Array.from({ length: 100 }, () => 2), 12, 94],
    ["uneven segments: one ends right at the boundary", [1, 3, 0.5, 4, 4, 4], 12, 3],
  ] as const)("%s", (_, durations, canSkipUntil, expected) => {
    expect(skippedSegments(durations, canSkipUntil)).toBe(expected);
  });

  it("canSkipUntilFor: six target durations, the least the RFC allows", () => {
    expect(canSkipUntilFor(2)).toBe(12);
    expect(canSkipUntilFor(1)).toBe(6);
  });
});

describe("withoutDeltaUpdates", () => {
  it.each([
    ["LL-HLS", "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12,PART-HOLD-BACK=0.6", "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.6"],
    ["segments only", "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12", "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES"],
    ["nothing offered", "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.6", "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.6"],
  ])("%s", (_, line, expected) => {
    const playlist = ["#EXTM3U", "#EXT-X-VERSION:9", "#EXT-X-TARGETDURATION:2", line, "#EXT-X-MEDIA-SEQUENCE:1", "#EXTINF:2.00000,", "a_1.m4s", ""].join("\n");
    expect(withoutDeltaUpdates(playlist)).toBe(playlist.replace(line, expected));
  });
});

describe("renderMediaPlaylist, complete segments' lines kept once made", () => {
  const map = { id: 0, uri: "s_init0.mp4", bytes: Buffer.alloc(0), tracks: [], codecs: [] };
  const map1 = { ...map, id: 1, uri: "s_init1.mp4" };
  const segment = (msn: number, m = map, discontinuity = false): HlsSegment => ({
    msn, uri: `s_${msn}.m4s`, parts: [], duration: 2, programDateTime: Date.parse("2026-11-28T00:00:00Z") + msn * 2000, discontinuity, map: m, bytes: undefined, size: 0,
  });
  const source = (listed: HlsSegment[]): PlaylistSource => ({ listed, openSegment: undefined, next: { msn: 9, partUri: "s_p90.m4s" }, mediaSequence: listed[0]!.msn, discontinuitySequence: 0, ended: false, currentMap: map1 });

  it("renders the same text from a warm cache, from fresh objects, and as the format says", () => {
    const listed = [segment(1), segment(2), segment(3, map1, true), segment(4, map1)];
    const first = renderMediaPlaylist(source(listed), { targetDuration: 2 });
    expect(renderMediaPlaylist(source(listed), { targetDuration: 2 })).toBe(first);
    expect(renderMediaPlaylist(source(listed.map((s) => ({ ...s }))), { targetDuration: 2 })).toBe(first);
    expect(first).toBe(
      [
        "#EXTM3U", "#EXT-X-VERSION:9", "#EXT-X-TARGETDURATION:2", "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES", "#EXT-X-MEDIA-SEQUENCE:1",
        '#EXT-X-MAP:URI="s_init0.mp4"', "#EXT-X-PROGRAM-DATE-TIME:2026-11-28T00:00:02.000Z", "#EXTINF:2.00000,", "s_1.m4s",
        "#EXT-X-PROGRAM-DATE-TIME:2026-11-28T00:00:04.000Z", "#EXTINF:2.00000,", "s_2.m4s",
        "#EXT-X-DISCONTINUITY", '#EXT-X-MAP:URI="s_init1.mp4"', "#EXT-X-PROGRAM-DATE-TIME:2026-11-28T00:00:06.000Z", "#EXTINF:2.00000,", "s_3.m4s",
        "#EXT-X-PROGRAM-DATE-TIME:2026-11-28T00:00:08.000Z", "#EXTINF:2.00000,", "s_4.m4s",
        "",
      ].join("\n"),
    );
    // A segment first listed after others (its map line then not needed) and later first (needed): both forms right.
    const later = renderMediaPlaylist(source(listed.slice(3)), { targetDuration: 2 });
    expect(later).toContain('#EXT-X-MAP:URI="s_init1.mp4"\n#EXT-X-PROGRAM-DATE-TIME:2026-11-28T00:00:08.000Z\n#EXTINF:2.00000,\ns_4.m4s');
  });
});
