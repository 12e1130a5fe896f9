import type { ApiDeps } from "../deps";
import { notFound } from "../errors";
import { route, type Route } from "../route";
import { errorBody } from "../schemas/common";
import { playbackInfoObject, type PlaybackInfoJson } from "../schemas/playback";

/** DESIGN.md: live HLS is served at `$PUBLIC_URL/hls/<playbackId>/index.m3u8`. */
export function hlsUrl(publicUrl: string, playbackId: string): string {
  return `${publicUrl}/hls/${playbackId}/index.m3u8`;
}

export function playbackRoutes(deps: ApiDeps): Route[] {
  return [
    route({
      method: "get",
      path: "/playback/:id",
      tag: "Playback",
      summary: "Where and how to play a stream (no authorization: viewers need it)",
      auth: false,
      responses: { 200: { description: "Playback info", schema: playbackInfoObject }, 404: { description: "Unknown playback id", schema: errorBody } },
      handle: async ({ params }) => {
        const s = await deps.store.streams.getByPlaybackId(params.id!);
        if (!s) throw notFound(`playback id ${params.id!.slice(0, 64)}`);
        const info: PlaybackInfoJson = {
          type: "live",
          meta: {
            live: s.isActive ? 1 : 0,
            playbackPolicy: { type: "public" },
            source: [{ hrn: "HLS (TS)", type: "html5/application/vnd.apple.mpegurl", url: hlsUrl(deps.publicUrl(), s.playbackId!) }],
          },
        };
        return { status: 200, body: info };
      },
    }),
  ];
}
