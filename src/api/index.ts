export { createApp, apiRoutes, BODY_LIMIT_BYTES } from "./app";
export type { ApiDeps, LiveControl } from "./deps";
export { EVENT_NAMES, type EventName } from "./schemas/webhook";
export { hlsUrl } from "./routes/playback";
