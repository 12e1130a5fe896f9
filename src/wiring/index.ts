// The server's wiring, one area at a time: each area makes its components, registers how they
// stop (src/shutdown.ts says in which order), and returns what later areas need.
export { wiring, type Wiring } from "./context";
export { FIRST_KEY_FILE, wireStorage, type StorageArea } from "./storage";
export { wireMetrics, type MetricReaders } from "./metrics";
export { wireEvents, type EventsArea } from "./events";
export { wireMedia, type MediaArea } from "./media";
export { startFinalizing, wireRecordings, type RecordingsArea } from "./recordings";
export { startClipping, wireClips, type ClipsArea } from "./clips";
export { LocalRtmp, wireSessions, type SessionsArea } from "./sessions";
export { wireCluster, type ClusterArea } from "./cluster";
export { wireIngest, type IngestArea } from "./ingest";
export { wireOperator, type OperatorArea } from "./operator";
export { wirePlayback, type PlaybackArea } from "./playback";
export { internalUrl, listenPublic, publicPages, srtUrls, wireRateLimitRedis, type PublicPages } from "./http";
