import { z } from "zod";
import type { ViewerCount } from "../../playback";
import { expected } from "../../shapes";

// GET /data/views/now, in Livepeer Studio's shape (the SDK's metrics.getRealtimeViewership).

export const BREAKDOWNS = ["playbackId", "device", "browser", "country"] as const;
const breakdown = z.enum(BREAKDOWNS, { error: `must be one of ${BREAKDOWNS.join(", ")}` });
// One value or several (a repeated query parameter): always a list.
const breakdowns = z.preprocess((v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]), z.array(breakdown).max(BREAKDOWNS.length * 2));

export const viewsNowQuery = z.object({
  playbackId: z.string(expected("a string")).min(1, "must not be empty").max(200).optional().describe("only this playback id (one of the caller's streams)"),
  creatorId: z.string(expected("a string")).optional().describe("not supported: onair does not record viewers' creator ids (422)"),
  // The SDK sends `breakdownBy[]=…` (one per value); `breakdownBy=…` is taken too.
  "breakdownBy[]": breakdowns.describe("playbackId: one row per playback id; device, browser and country are accepted but onair does not record them"),
  breakdownBy: breakdowns,
});

export const realtimeViewershipObject = z
  .object({
    playbackId: z.string().optional(),
    viewCount: z.number().describe("viewers whose player asked for a playlist within VIEWER_WINDOW_SECONDS (30 s), or plays over WebRTC"),
    // onair's own, beside Livepeer's fields: the SDK drops fields it does not know.
    webrtcViewCount: z.number().describe("how many of viewCount watch over WebRTC (WHEP); the others play HLS"),
    errorRate: z.number().describe("always 0: onair does not see players' errors"),
  })
  .meta({ id: "RealtimeViewershipMetric" });

export type RealtimeViewershipJson = z.infer<typeof realtimeViewershipObject>;

const row = (c: ViewerCount | undefined) => ({ viewCount: c?.viewers ?? 0, webrtcViewCount: c?.webrtc ?? 0, errorRate: 0 });

/**
 * The answer from the viewer counts of the caller's streams (pure): without a breakdown by
 * playback id, one row with the total (naming the playback id when the query named one);
 * with it, one row per playback id counted (and one for the queried id, even at 0).
 */
export function viewershipRows(counts: ReadonlyMap<string, ViewerCount>, byPlaybackId: boolean, playbackId?: string): RealtimeViewershipJson[] {
  if (!byPlaybackId) {
    const total = [...counts.values()].reduce((a, c) => ({ viewers: a.viewers + c.viewers, webrtc: a.webrtc + c.webrtc }), { viewers: 0, webrtc: 0 });
    return [{ ...(playbackId !== undefined ? { playbackId } : {}), ...row(total) }];
  }
  if (playbackId !== undefined) return [{ playbackId, ...row(counts.get(playbackId)) }];
  // Most watched first.
  return [...counts]
    .sort(([a, n], [b, m]) => m.viewers - n.viewers || (a < b ? -1 : a > b ? 1 : 0))
    .map(([id, c]) => ({ playbackId: id, ...row(c) }));
}
