export { SessionManager, type SessionManagerDeps } from "./manager";
export { MAX_PIPELINE_RESTARTS, type StreamRuntime, type EndReason } from "./streamRuntime";
export type { Health } from "./health";
export type { LiveControl } from "./control";
export type { LiveSessionInfo, LiveSessionObserver, WrittenSegment } from "./observer";
