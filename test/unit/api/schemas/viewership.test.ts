import { viewershipRows } from "../../../../src/api/schemas/viewership";
import type { ViewerCount } from "../../../../src/playback/viewers";

// GET /data/views/now's rows from the summed counts (Livepeer's RealtimeViewershipMetric shape,
// with onair's webrtcViewCount beside viewCount).

const c = (viewers: number, webrtc = 0): ViewerCount => ({ viewers, webrtc });
const counts = new Map([["p1", c(2, 1)], ["p2", c(5)], ["p3", c(2, 2)]]);

describe("viewershipRows", () => {
  it.each<[string, Map<string, ViewerCount>, boolean, string | undefined, unknown[]]>([
    ["no breakdown: one row with the total, WebRTC viewers summed too", counts, false, undefined, [{ viewCount: 9, webrtcViewCount: 3, errorRate: 0 }]],
    ["no breakdown, nobody watching: a row at 0", new Map(), false, undefined, [{ viewCount: 0, webrtcViewCount: 0, errorRate: 0 }]],
    ["filtered by playback id: that id's row", new Map([["p2", c(5, 4)]]), false, "p2", [{ playbackId: "p2", viewCount: 5, webrtcViewCount: 4, errorRate: 0 }]],
    ["filtered by a playback id nobody watches: its row at 0", new Map(), true, "p9", [{ playbackId: "p9", viewCount: 0, webrtcViewCount: 0, errorRate: 0 }]],
    [
      "by playback id: most watched first (all protocols), ties by id",
      counts,
      true,
      undefined,
      [
        { playbackId: "p2", viewCount: 5, webrtcViewCount: 0, errorRate: 0 },
        { playbackId: "p1", viewCount: 2, webrtcViewCount: 1, errorRate: 0 },
        { playbackId: "p3", viewCount: 2, webrtcViewCount: 2, errorRate: 0 },
      ],
    ],
    ["by playback id, nobody watching: no rows", new Map(), true, undefined, []],
  ])("%s", (_name, given, byPlaybackId, playbackId, expected) => {
    expect(viewershipRows(given, byPlaybackId, playbackId)).toEqual(expected);
  });
});
