export { SessionManager, type SessionManagerDeps } from "./manager";
export { StreamKeyIndex } from "./streamKeys";
export { MAX_PIPELINE_RESTARTS, type StreamRuntime, type EndReason } from "./streamRuntime";
export type { Health } from "./health";
export type { LiveControl, StreamNotice } from "./control";
export { endOrphanedSession, type OrphanDeps } from "./orphans";
export { realClock, type Clock, type ClockTimer } from "./clock";
export type { LiveSessionInfo, LiveSessionObserver, WrittenSegment } from "./observer";
