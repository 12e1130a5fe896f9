export { ffmpegHasCmaf, ffmpegHasLibopus, locateFfmpeg, type FfmpegLocation } from "./ffmpegLocator";
export { ProcessRegistry, reapLeftovers, spawnSupervised, type ProcessEnd, type SupervisedProcess } from "./supervisedProcess";
export { loadLadder, renditionLadder } from "./ladder";
export { AUDIO_BITRATE, LivePipeline, type LivePipelineOptions, type PipelineInput, type RealtimeTap } from "./livePipeline";
export { PackagingRun, type PackagingRunOptions, type SourceForm } from "./packagingRun";
export { buildLiveArgs, OPUS_BITRATE, realtimeVideoFd, renditionFd, trackInputs, type OpusRoute, type PipeFormat } from "./liveArgs";
export { buildOpusArgs, OpusEncoder, type OpusEncoderOptions } from "./opusEncoder";
export { endPlaylists, HlsFiles, variantDir, variantPlaylist, writeAtomically, type StoredSegment } from "./hlsFiles";
export { buildMasterPlaylist, parseMediaPlaylist, withEndlist } from "./playlists";
export { buildStillArgs, stillAt, THUMBNAIL_FILE, THUMBNAIL_SECONDS, THUMBNAIL_WIDTH } from "./thumbnails";
export { buildLiveStillArgs, LiveStills, type LiveStillsOptions } from "./liveStill";
export {
  failuresAfter,
  LISTENER_SCHEDULE,
  PIPELINE_SCHEDULE,
  REMOTE_SCHEDULE,
  RestartLoop,
  restartDelayMs,
  type Failure,
  type RestartKind,
  type RestartMetrics,
  type RestartSchedule,
  type RestartStatus,
  type RestartTimers,
} from "./restarts";
export { ffconcatQuote, INPUT_RULES, inputArgs, InputScripts, inputScript, type InputKind, type UntrustedInput } from "./untrustedInput";
export {
  buildSpriteArgs,
  buildTileArgs,
  jpegSize,
  renderStoryboardVtt,
  spriteCapacity,
  spriteFile,
  spriteGrid,
  spriteList,
  spriteTiles,
  STORYBOARD_DIR,
  STORYBOARD_SPRITE,
  STORYBOARD_SPRITE_PARAM,
  STORYBOARD_VTT,
  takesTile,
  tileDate,
  trimTiles,
  type Tile,
} from "./storyboard";
