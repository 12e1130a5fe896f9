// RTMP, spoken by onair itself: pure codecs (AMF0, the chunk stream, FLV tags, the handshake),
// a publisher for multistream pushes, and the server side that takes publishers and players (its caller decides: onair's ingest refuses every play). The codecs
// know no sockets, so the publisher and the server share them. Enhanced RTMP (HEVC/AV1/VP9, multitrack) media tags come from ./enhanced.
export { Amf0EcmaArray, Amf0Error, amf0Text, decodeAmf0, encodeAmf0, isAmf0Object, type Amf0Object, type Amf0Value } from "./amf0";
export { ChunkReader, ChunkWriter, controlMessage, pingResponse, RtmpChunkError, RtmpType, UserControl, type ChunkReaderLimits, type RtmpMessage } from "./chunks";
export { encodeFlvTag, flvHeader, FlvError, FlvReader, FlvTagType, type FlvTag } from "./flv";
export { ClientHandshake, HANDSHAKE_SIZE, helloPacket, RtmpHandshakeError, ServerHandshake, type HandshakeStep } from "./handshake";
export {
  RtmpServer,
  RtmpServerConnection,
  parseMedia,
  type PlayDecision,
  type PlayMedia,
  type PlayReader,
  type PlayRequest,
  type PublishDecision,
  type PublishedMedia,
  type PublishRequest,
  type PublishSink,
  type RtmpServerOptions,
} from "./server";
export type { PlayCommand, PlayEndCause, PublishEndReason } from "./serverCommands";
export { RtmpError, RtmpPublisher, splitRtmpPath, type RtmpDestination, type RtmpErrorKind, type RtmpPublisherOptions, type RtmpStage } from "./publisher";
export {
  AUDIO_FOURCCS,
  CapsEx,
  clientSupports,
  connectCapsReply,
  encodeAudioTag,
  encodeVideoTag,
  EnhancedRtmpError,
  FourCcInfo,
  MAX_NANO_OFFSET,
  readAudioTag,
  readConnectCaps,
  readVideoTag,
  RECONNECT_REQUEST_CODE,
  reconnectRequestStatus,
  VIDEO_FOURCCS,
  VideoFrameTypes,
  type AudioChannelOrder,
  type AudioFourCc,
  type AudioPacket,
  type AudioTag,
  type AudioTrack,
  type ConnectCaps,
  type MultitrackLayout,
  type ServerCaps,
  type VideoFourCc,
  type VideoFrameType,
  type VideoPacket,
  type VideoTag,
  type VideoTrack,
} from "./enhanced";
