import { viewershipRows } from "../../../../src/api/schemas/viewership";

// GET /data/views/now's rows from the summed counts (Livepeer's RealtimeViewershipMetric shape).

const counts = new Map([["p1", 2], ["p2", 5], ["p3", 2]]);

describe("viewershipRows", () => {
  it.each<[string, Map<string, number>, boolean, string | undefined, unknown[]]>([
    ["no breakdown: one row with the total", counts, false, undefined, [{ viewCount: 9, errorRate: 0 }]],
    ["no breakdown, nobody watching: a row at 0", new Map(), false, undefined, [{ viewCount: 0, errorRate: 0 }]],
    ["filtered by playback id: that id's row", new Map([["p2", 5]]), false, "p2", [{ playbackId: "p2", viewCount: 5, errorRate: 0 }]],
    ["filtered by a playback id nobody watches: its row at 0", new Map(), true, "p9", [{ playbackId: "p9", viewCount: 0, errorRate: 0 }]],
    [
      "by playback id: most watched first, ties by id",
      counts,
      true,
      undefined,
      [{ playbackId: "p2", viewCount: 5, errorRate: 0 }, { playbackId: "p1", viewCount: 2, errorRate: 0 }, { playbackId: "p3", viewCount: 2, errorRate: 0 }],
    ],
    ["by playback id, nobody watching: no rows", new Map(), true, undefined, []],
  ])("%s", (_name, c, byPlaybackId, playbackId, expected) => {
    expect(viewershipRows(c, byPlaybackId, playbackId)).toEqual(expected);
  });
});
