// Shared shapes: the data every layer speaks of (profiles, renditions, counters, event names
// and payloads, the stream/session/target JSON views). Below every other folder: it imports
// nothing of src/, so the API, events, recordings, sessions and media can all use it.

export { expected } from "./messages";
export { PROFILE_NAME, profile, type Profile } from "./profile";
export type { Rendition, SourceTrack } from "./rendition";
export type { LiveRates, SegmentCounters } from "./counters";
export { DEFAULT_POLICY_REFRESH_SECONDS, isGated, MAX_POLICY_REFRESH_SECONDS, playbackPolicyObject, type PlaybackPolicy } from "./playbackPolicy";
export { dvrWindow, dvrWindowSeconds, MAX_DVR_WINDOW_SECONDS, MAX_RECONNECT_WINDOW_SECONDS, presentStream, reconnectWindow, streamObject, type LiveHealth, type StoredStream, type StreamJson } from "./stream";
export { MAX_PULL_HEADERS, MAX_PULL_SOURCE_LENGTH, parsePullSource, PULL_SCHEMES, pullConfig, takesHeaders, type ParsedPullSource, type PullConfig, type PullScheme, type PullSource } from "./pull";
export { refusePublish, type PublishRefusal, type PublishRefusalKind } from "./publishRefusal";
export { INGEST_PROTOCOLS, presentSession, recordingUrls, sessionObject, type IngestProtocol, type RecordingLinks, type SessionJson, type StoredSession } from "./session";
export { presentTarget, targetCreatedObject, targetObject, targetTlsVerify, type StoredTarget, type TargetJson } from "./target";
export {
  buildDeliveryBody,
  EVENT_NAMES,
  type DeliveryBody,
  type EventName,
  type EventPayloads,
  type EventStream,
  type EventTarget,
  type RaisedEvent,
} from "./events";
