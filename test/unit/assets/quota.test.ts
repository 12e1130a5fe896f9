import { capRefusal, CLIP_END_AHEAD_MS, clipEnd, cutBytesNeeded, estimateClipBytes, freeSpaceRefusal, newestMedia, UNKNOWN_SOURCE_BITS_PER_SECOND } from "../../../src/assets";

const MiB = 1024 * 1024;
const NOW = Date.parse("2026-01-01T00:01:00.000Z");
const MAX = 600_000;

describe("clipEnd", () => {
  // The newest media ends 0.7 s before now: a player's "the last 10 s" asks up to now.
  const newest = NOW - 700;
  it.each([
    ["none asked: the newest media", NOW - 10_000, undefined, newest, newest],
    ["none asked, longer than the maximum: start + maximum", NOW - 700_000, undefined, newest, NOW - 700_000 + MAX],
    ["asked within the media: as asked", NOW - 10_000, NOW - 2000, newest, NOW - 2000],
    ["asked = now, past the newest media: the newest media", NOW - 10_000, NOW, newest, newest],
    ["asked a few seconds ahead of now: the newest media", NOW - 10_000, NOW + CLIP_END_AHEAD_MS, newest, newest],
    ["asked further ahead: as asked (refused by the caller)", NOW - 10_000, NOW + CLIP_END_AHEAD_MS + 1, newest, NOW + CLIP_END_AHEAD_MS + 1],
    ["asked, nothing available: as asked (refused by the caller)", NOW - 10_000, NOW, undefined, NOW],
    ["none asked, nothing available: none", NOW - 10_000, undefined, undefined, undefined],
    ["up to now, but the start is after the newest media: none", NOW - 500, NOW, newest, undefined],
    ["none asked, the start after the newest media: none", NOW - 500, undefined, newest, undefined],
  ])("%s", (_what, start, asked, newestMs, want) => {
    expect(clipEnd(start, asked, newestMs, NOW, MAX)).toBe(want);
  });
});

describe("newestMedia", () => {
  it("is the latest end of any source, none without sources", () => {
    expect(newestMedia([{ to: 5 }, { to: 9 }, { to: 7 }])).toBe(9);
    expect(newestMedia([])).toBeUndefined();
  });
});

describe("estimateClipBytes", () => {
  const noCounters = { sourceBytes: 0, transcodedBytes: 0, sourceSegmentsDuration: 0 };
  it.each([
    ["from the segments on disk", 10, { bytes: 2_000_000, seconds: 20 }, noCounters, 1_000_000],
    ["from the session's counters when the segments are not here", 10, undefined, { sourceBytes: 500_000, transcodedBytes: 500_000, sourceSegmentsDuration: 10 }, 1_000_000],
    ["segments of no length: the counters", 10, { bytes: 0, seconds: 0 }, { sourceBytes: 100_000, transcodedBytes: 0, sourceSegmentsDuration: 10 }, 100_000],
    ["nothing known: the high assumed rate", 10, undefined, noCounters, (UNKNOWN_SOURCE_BITS_PER_SECOND / 8) * 10],
  ])("%s", (_what, seconds, segments, session, media) => {
    const got = estimateClipBytes(seconds, segments, session);
    // The media, plus room for the MP4's index: never less than the media.
    expect(got).toBeGreaterThanOrEqual(media);
    expect(got).toBeLessThanOrEqual(media * 1.02 + 64 * 1024);
  });
});

describe("capRefusal", () => {
  const caps = { maxAssets: 3, maxBytes: 100 * MiB };
  it.each([
    ["room for one more", { count: 2, bytes: 50 * MiB }, 10 * MiB, undefined],
    ["exactly filling both caps", { count: 2, bytes: 90 * MiB }, 10 * MiB, undefined],
    ["the count reached", { count: 3, bytes: 0 }, 1, "at most 3 assets per user (MAX_ASSETS_PER_USER); this user has 3: delete some first"],
    ["the bytes passed", { count: 1, bytes: 95 * MiB }, 10 * MiB, "at most 100 MiB of clips per user (MAX_CLIP_MB_PER_USER); this user's hold 95 MiB and this clip needs about 10 MiB: delete some first"],
  ])("%s", (_what, usage, estimate, want) => {
    expect(capRefusal(usage, estimate, caps)).toBe(want);
  });
  it("a cap of 0 refuses every clip", () => {
    expect(capRefusal({ count: 0, bytes: 0 }, 1, { maxAssets: 0, maxBytes: MiB })).toMatch(/^at most 0 assets per user \(MAX_ASSETS_PER_USER\)/);
    expect(capRefusal({ count: 0, bytes: 0 }, 1, { maxAssets: 5, maxBytes: 0 })).toMatch(/^at most 0 MiB of clips per user \(MAX_CLIP_MB_PER_USER\)/);
  });
});

describe("freeSpaceRefusal", () => {
  it("a cut fits when what stays free after it is at least the minimum", () => {
    expect(freeSpaceRefusal(200 * MiB, cutBytesNeeded(50 * MiB), 100 * MiB)).toBeUndefined();
    expect(freeSpaceRefusal(200 * MiB, cutBytesNeeded(51 * MiB), 100 * MiB)).toBe(
      "not enough free space for the clip: it needs about 102 MiB and 100 MiB must stay free for live sessions (STORAGE_MIN_FREE_MB), but only 200 MiB are free; try again later",
    );
  });
  it("counts the MP4 and its HLS copy", () => {
    expect(cutBytesNeeded(10)).toBe(20);
  });
});
