export {
  RtmpIngest,
  INGEST_APP,
  READER_BUFFER_SECONDS,
  streamKeyFromPath,
  rtmpRefusalStatus,
  type Admission,
  type IngestHandlers,
  type IngestOptions,
  type PublisherStats,
  type RefusalStatus,
} from "./rtmpIngest";
export { FlvPipeReader } from "./flvPipe";
export { Mp4PipeReader } from "./mp4Pipe";
export { PASSTHROUGH_VIDEO } from "./mediaCheck";
export { isVideoKeyframe, PublishStats, type PublishStatsView } from "./publishStats";
export { BridgeTickets, connectionOfProcess, type BridgedPublish, type TicketConnection } from "./bridges";
export * from "./webrtc";
export { buildRtpBridgeArgs, buildSrtBridgeArgs, srtListenerInput } from "./bridgeArgs";
export * from "./srt";
export * from "./pull";
