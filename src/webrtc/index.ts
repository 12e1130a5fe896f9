// WebRTC pieces both directions share, publishing (WHIP) and playing (WHEP): SDP offers and
// answers, the few things onair reads from RTP and RTCP, STUN answers. Pure functions, but for
// the peers' set-up steps and the STUN responder's socket.
export { iceServerLinks, OfferError, PLAYOUT_DELAY_URI, restrictOffer, withPublicAddress, type OfferedTrack, type OfferRole, type RestrictedOffer } from "./sdp";
export { isRtcp, randomSsrc, readRtp, rtpPayloadOffset, startsH264Keyframe, type RtpPacket } from "./rtp";
export { readRtcp, type RtcpFeedback } from "./rtcp";
export { addOfferCandidates, candidateAddress, gathered, GATHER_TIMEOUT_MS, isLoopback, peerConfig, REMOTE_CANDIDATES_DELAY_MS } from "./peer";
export { STUN_PORT, stunAnswer, type StunSender } from "./stun";
export { StunResponder } from "./stunResponder";
