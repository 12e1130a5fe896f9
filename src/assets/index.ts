// Clips as assets (POST /clip): cut from a session's live window or recording by a queue job,
// stored beside recordings (local disk or the bucket) and played at their own playback id.
export { buildClipArgs, progressSeconds, type ClipArgsInput } from "./clipArgs";
export { ASSET_MP4, ASSET_PLAYLIST, CLIP_ATTEMPTS, ClipMaker, sourcePlaylist, videoSpecOf, type ClipMakerDeps } from "./maker";
export { LiveClipBuffer, renderBufferPlaylist, trimWindow, type BufferedSegment } from "./liveBuffer";
export { assetUrls, presentAsset, type AssetJson } from "./present";
export { capRefusal, CLIP_END_AHEAD_MS, clipEnd, cutBytesNeeded, estimateClipBytes, freeSpaceRefusal, newestMedia, UNKNOWN_SOURCE_BITS_PER_SECOND, type ClipCaps } from "./quota";
export { CLIP_QUEUE, clipJob, ClipRefused, ClipService, DEFAULT_MAX_CLIP_SECONDS, freeBytesAt, type ClipJob, type ClipRequest, type ClipServiceDeps } from "./service";
export { CLIP_RENDITION, describeAvailable, resolveClipSource, type SourcePaths } from "./sources";
export { coveredRange, dateSegments, parseTimedPlaylist, planClip, type ClipPlan, type TimedSegment } from "./timeline";
export { LiveStoryboard, type LiveStoryboardOptions } from "./liveStoryboard";
