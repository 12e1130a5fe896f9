export { locateFfmpeg, type FfmpegLocation } from "./ffmpegLocator";
export { ProcessRegistry, reapLeftovers, spawnSupervised, type ProcessEnd, type SupervisedProcess } from "./supervisedProcess";
export { loadLadder, renditionLadder } from "./ladder";
export { LivePipeline } from "./livePipeline";
export { buildLiveArgs, variantPlaylist } from "./liveArgs";
export { endPlaylists, writeAtomically } from "./hlsFiles";
export { buildMasterPlaylist, parseMediaPlaylist, withEndlist } from "./playlists";
