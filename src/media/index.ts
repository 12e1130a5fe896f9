export { ffmpegHasCmaf, locateFfmpeg, type FfmpegLocation } from "./ffmpegLocator";
export { ProcessRegistry, reapLeftovers, spawnSupervised, type ProcessEnd, type SupervisedProcess } from "./supervisedProcess";
export { loadLadder, renditionLadder } from "./ladder";
export { AUDIO_BITRATE, LivePipeline, type LivePipelineOptions } from "./livePipeline";
export { buildLiveArgs, renditionFd } from "./liveArgs";
export { endPlaylists, HlsFiles, variantDir, variantPlaylist, writeAtomically, type StoredSegment } from "./hlsFiles";
export { buildMasterPlaylist, parseMediaPlaylist, withEndlist } from "./playlists";
export { buildStillArgs, stillAt, THUMBNAIL_FILE, THUMBNAIL_SECONDS, THUMBNAIL_WIDTH } from "./thumbnails";
