export { createApp, apiRoutes, BODY_LIMIT_BYTES } from "./app";
export type { ApiDeps } from "./deps";
export { RedisRateLimiter, type RateLimiter } from "./sharedRateLimit";
export { hlsUrl } from "./routes/playback";
