import { assetUrls } from "../../assets";
import { dvrWindowSeconds } from "../../shapes";
import type { ApiDeps } from "../deps";
import { notFound } from "../errors";
import { route, type Route, type RouteResult } from "../route";
import { errorBody } from "../schemas/common";
import { playbackInfoObject, type PlaybackInfoJson } from "../schemas/playback";

/** docs/architecture.md#public-urls: live HLS is served at `$PUBLIC_URL/hls/<playbackId>/index.m3u8`. */
export function hlsUrl(publicUrl: string, playbackId: string): string {
  return `${publicUrl}/hls/${playbackId}/index.m3u8`;
}

/** WHEP (src/http/whep.ts): WebRTC playback of a live stream. */
export function whepUrl(publicUrl: string, playbackId: string): string {
  return `${publicUrl}/whep/${playbackId}`;
}

/** The stream's newest picture, beside its playlists (src/media/thumbnails.ts): 404 until its first session writes one. */
export function thumbnailUrl(publicUrl: string, playbackId: string): string {
  return `${publicUrl}/hls/${playbackId}/thumbnail.jpg`;
}

/** A DVR stream's seek preview (src/media/storyboard.ts): 404 until its session takes a first tile. */
export function storyboardUrl(publicUrl: string, playbackId: string): string {
  return `${publicUrl}/hls/${playbackId}/storyboard.vtt`;
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
        if (!s) return vodPlayback(deps, params.id!);
        const info: PlaybackInfoJson = {
          type: "live",
          meta: {
            live: s.isActive ? 1 : 0,
            playbackPolicy: { type: s.playbackPolicy?.type ?? "public" },
            source: [
              { hrn: "HLS (TS)", type: "html5/application/vnd.apple.mpegurl", url: hlsUrl(deps.publicUrl(), s.playbackId!) },
              // Livepeer's player tries this first. A copied source with B-frames is refused there
              // (WebRTC players cannot take them), and the player falls back to HLS at once.
              ...(deps.webrtcPlayback ? [{ hrn: "WebRTC (H264)" as const, type: "html5/video/h264" as const, url: whepUrl(deps.publicUrl(), s.playbackId!) }] : []),
              // Livepeer's names, which the SDK's enums accept.
              { hrn: "Thumbnail (JPEG)", type: "image/jpeg", url: thumbnailUrl(deps.publicUrl(), s.playbackId!) },
              // Mux's name for it: only a live stream with a window to seek back into has one.
              ...(s.isActive && dvrWindowSeconds(s.dvrWindow, deps.dvrWindowSeconds ?? 0) > 0
                ? [{ hrn: "Storyboard (VTT)" as const, type: "text/vtt" as const, url: storyboardUrl(deps.publicUrl(), s.playbackId!) }]
                : []),
            ],
          },
        };
        return { status: 200, body: info };
      },
    }),
  ];
}

/** An asset's (a clip's) playback id: `vod`, its HLS and its MP4, once it is ready (Livepeer's answer for assets). */
async function vodPlayback(deps: ApiDeps, playbackId: string): Promise<RouteResult> {
  const a = await deps.clips?.assets.getByPlaybackId(playbackId);
  if (!a || a.phase !== "ready") throw notFound(`playback id ${playbackId.slice(0, 64)}`);
  const urls = assetUrls(deps.publicUrl(), a.playbackId);
  const info: PlaybackInfoJson = {
    type: "vod",
    meta: {
      playbackPolicy: { type: "public" },
      source: [
        { hrn: "HLS (TS)", type: "html5/application/vnd.apple.mpegurl", url: urls.playbackUrl },
        { hrn: "MP4", type: "html5/video/mp4", url: urls.downloadUrl },
      ],
    },
  };
  return { status: 200, body: info };
}
