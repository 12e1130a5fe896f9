// Watching a stream: who may (playback policies, JWTs, viewer tokens) and how many do (viewers).
export { PlaybackGate, type Credentials, type GateOptions, type PlaybackSubject, type UriQueries, type ViewerLog, type WebhookQuestion } from "./gate";
export { CLOCK_SKEW_SECONDS, verifyPlaybackJwt, type JwtVerdict, type KeyLookup, type KnownKey } from "./jwt";
export { MEDIA_PARAM, mintToken, newViewerId, readToken, SESSION_PARAM, type TokenKind, type ViewerToken } from "./tokens";
export { webhookQuestion } from "./webhookPolicy";
export { playbackSubjects } from "./subjects";
export { DEFAULT_VIEWER_WINDOW_MS, ViewerCounter, type ViewerCounterOptions } from "./viewers";
export { freshViewerRowsMs, startViewerCountFlush, type ViewerCountFlush, type ViewerCountFlushOptions } from "./viewerCountFlush";
