export { SessionManager, type SessionManagerDeps } from "./manager";
export { StreamKeyIndex } from "./streamKeys";
export { MAX_PIPELINE_RESTARTS, type StreamRuntime } from "./streamRuntime";
export type { EndReason } from "./endReason";
export type { Health } from "./health";
export type { LiveControl, StreamNotice } from "./control";
export { endOrphanedSession, type OrphanDeps } from "./orphans";
export { offsetClock, realClock, type Clock, type ClockTimer } from "./clock";
export type { LiveSessionInfo, LiveSessionObserver, WrittenSegment } from "./observer";
