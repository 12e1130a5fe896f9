import { canSkipUntilFor, skippedSegments, withoutDeltaUpdates } from "../../../src/hls/playlist";

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
