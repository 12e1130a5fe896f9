export { WhipIngest, WhipRefusal, type WhipIngestDeps, type WhipStatus } from "./whipIngest";
export { rtpInputSdp } from "./bridgeSdp";
export type { WhipPeerSettings } from "./whipPublish";
