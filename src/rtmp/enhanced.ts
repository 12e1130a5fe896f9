// Enhanced RTMP (veovera E-RTMP v2, which includes v1): the media-tag layer and the connect
// negotiation, as pure functions. Split by job: shared framing, video, audio, connect.
export { EnhancedRtmpError, MAX_NANO_OFFSET, type MultitrackLayout } from "./enhancedCommon";
export { encodeVideoTag, readVideoTag, VIDEO_FOURCCS, VideoFrameTypes, type VideoFourCc, type VideoFrameType, type VideoPacket, type VideoTag, type VideoTrack } from "./enhancedVideo";
export { AUDIO_FOURCCS, encodeAudioTag, readAudioTag, type AudioChannelOrder, type AudioFourCc, type AudioPacket, type AudioTag, type AudioTrack } from "./enhancedAudio";
export { CapsEx, clientSupports, connectCapsReply, FourCcInfo, readConnectCaps, RECONNECT_REQUEST_CODE, reconnectRequestStatus, type ConnectCaps, type ServerCaps } from "./enhancedConnect";
