// onair's own HLS packager: fragmented MP4 from ffmpeg in, LL-HLS playlists, parts and segments out.
export { aacObjectType, childBoxes, Fmp4Error, Fmp4Splitter, parseFragment, parseInit } from "./boxes";
export type { FragmentInfo, FragmentTrack, Fmp4Piece, InitTrack, TrackDefaults } from "./boxes";
export { BlockingWaits, parseBlockingQuery, satisfies, tooFarAhead, type BlockingRequest, type BlockingWaitCaps } from "./blocking";
export { firstMsnFor, LivePackager, measuredPartTarget, nominalPartTarget, PART_SECONDS, renditionsPlayable, SILENT_RENDITION_SEGMENTS, targetDurationFor, type MediaFile, type PackagerOptions, type PackagerRun } from "./packager";
export { lastPartOf, partHoldBack, renderMediaPlaylist, SEGMENTS_WITH_PARTS, withoutDeltaUpdates } from "./playlist";
export { RenditionTrack, TrackError, type HlsMap, type HlsPart, type HlsSegment, type RunClock } from "./track";
export { LiveHls } from "./registry";
export { buildMasterPlaylist, playlistName, type Variant } from "./master";
export { addUriQuery, type UriRole } from "./uris";
