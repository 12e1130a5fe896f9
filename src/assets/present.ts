import type { AssetRecord, AssetVideoSpec } from "../db";

// The asset object as Livepeer's API (and the `livepeer` SDK's Asset model) has it.

/** Where a ready asset plays: `$PUBLIC_URL/vod/<its playbackId>/…`. The playback id is the key, as for live HLS. */
export function assetUrls(publicUrl: string, playbackId: string): { playbackUrl: string; downloadUrl: string } {
  return {
    playbackUrl: `${publicUrl}/vod/${playbackId}/index.m3u8`,
    downloadUrl: `${publicUrl}/vod/${playbackId}/video.mp4`,
  };
}

export interface AssetJson {
  id: string;
  type: "video";
  playbackId: string;
  userId: string;
  name: string;
  createdAt: number;
  /** `startTime` and `endTime`: the wall-clock range it covers (from the keyframe at or before the start asked for; to the newest media when asked "up to now"). */
  source: { type: "clip"; sessionId: string; playbackId: string; sourceId: string; startTime: number; endTime: number };
  status: { phase: AssetRecord["phase"]; updatedAt: number; progress?: number; errorMessage?: string };
  playbackUrl?: string;
  downloadUrl?: string;
  size?: number;
  videoSpec?: {
    format: string;
    duration?: number;
    bitrate?: number;
    tracks: AssetVideoSpec["tracks"];
  };
}

/** The API's (and asset.ready's) view of an asset: URLs and media details once it is ready. */
export function presentAsset(a: AssetRecord, publicUrl: string): AssetJson {
  const status: AssetJson["status"] = { phase: a.phase, updatedAt: a.updatedAt };
  if (a.progress !== null && (a.phase === "waiting" || a.phase === "processing")) status.progress = a.progress;
  if (a.phase === "failed" && a.errorMessage) status.errorMessage = a.errorMessage;
  const json: AssetJson = {
    id: a.id,
    type: "video",
    playbackId: a.playbackId,
    userId: a.userId,
    name: a.name,
    createdAt: a.createdAt,
    source: { type: "clip", sessionId: a.sessionId, playbackId: a.sourcePlaybackId, sourceId: a.streamId, startTime: a.clipStart, endTime: a.clipEnd },
    status,
  };
  if (a.phase === "ready") {
    Object.assign(json, assetUrls(publicUrl, a.playbackId));
    if (a.size !== null) json.size = a.size;
    if (a.videoSpec) {
      const duration = a.duration ?? a.videoSpec.duration;
      json.videoSpec = {
        format: a.videoSpec.format,
        ...(duration !== undefined ? { duration } : {}),
        ...(duration && a.size ? { bitrate: Math.round((a.size * 8) / duration) } : {}),
        tracks: a.videoSpec.tracks,
      };
    }
  }
  return json;
}
