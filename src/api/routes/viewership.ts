import { z } from "zod";
import type { ApiDeps } from "../deps";
import { unprocessable } from "../errors";
import { route, type Route } from "../route";
import { errorBody } from "../schemas/common";
import { realtimeViewershipObject, viewershipRows, viewsNowQuery } from "../schemas/viewership";

/** Nodes write their counts every heartbeat (5 s): three heartbeats without one is a node gone. */
const DEFAULT_FRESH_MS = 15_000;

export function viewershipRoutes(deps: ApiDeps): Route[] {
  const { store } = deps;
  const freshMs = deps.viewerCountsFreshMs ?? DEFAULT_FRESH_MS;
  return [
    route({
      method: "get",
      path: "/data/views/now",
      tag: "Metrics",
      summary: "Concurrent viewers of the caller's streams now, summed over the nodes that package them",
      query: viewsNowQuery,
      responses: {
        200: {
          description:
            "One row with the total, or with breakdownBy[]=playbackId one row per watched playback id. A playback id that is not one of the caller's streams gives an empty array, as an unknown one does.",
          schema: z.array(realtimeViewershipObject),
        },
        422: { description: "Invalid query, or creatorId (onair does not record it)", schema: errorBody },
      },
      handle: async ({ userId, query }) => {
        if (query.creatorId !== undefined) throw unprocessable("creatorId: onair does not record viewers' creator ids; filter by playbackId instead");
        const byPlaybackId = [...query["breakdownBy[]"], ...query.breakdownBy].includes("playbackId");
        const { playbackId } = query;
        if (playbackId !== undefined) {
          // Another user's playback id filters to nothing, exactly like one that does not exist.
          const stream = await store.streams.getByPlaybackId(playbackId);
          if (!stream || stream.userId !== userId) return { status: 200, body: [] };
        }
        const counts = await store.viewerCounts.totalsForUser(userId, Date.now() - freshMs, playbackId);
        return { status: 200, body: viewershipRows(counts, byPlaybackId, playbackId) };
      },
    }),
  ];
}
