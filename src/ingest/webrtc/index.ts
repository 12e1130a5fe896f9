export { WhipIngest, WhipRefusal, type WhipIngestDeps, type WhipStatus } from "./whipIngest";
export { iceServerLinks, OfferError, restrictOffer, rtpInputSdp, withPublicAddress, type RestrictedOffer } from "./sdp";
export { isRtcp, rtpPayloadOffset, startsH264Keyframe } from "./rtp";
export type { WhipPeerSettings } from "./whipPublish";
