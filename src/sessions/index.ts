export { SessionManager, type SessionManagerDeps } from "./manager";
export type { LiveControl } from "./control";
export type { LiveSession, EndReason } from "./liveSession";
export type { LiveSessionInfo, LiveSessionObserver, WrittenSegment } from "./observer";
