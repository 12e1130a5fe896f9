// Watching a stream: who may (playback policies, JWTs, viewer tokens) and how many do (viewers).
export { DEFAULT_SESSION_SECONDS, PlaybackGate, type Credentials, type GateOptions, type PlaybackSubject, type UriQueries, type ViewerLog, type WebhookQuestion } from "./gate";
export { CLOCK_SKEW_SECONDS, verifyPlaybackJwt, type JwtVerdict, type KeyLookup, type KnownKey } from "./jwt";
export { MEDIA_PARAM, mintToken, newViewerId, readToken, SESSION_PARAM, type TokenKind, type ViewerToken } from "./tokens";
export { webhookQuestion } from "./webhookPolicy";
export { QuestionBudget, type QuestionBounds, type QuestionSlot } from "./questionBudget";
export { playbackSubjects } from "./subjects";
export { DEFAULT_VIEWER_WINDOW_MS, ViewerCounter, WEBRTC_VIEWER_PREFIX, type ViewerCount, type ViewerCounterOptions } from "./viewers";
export { freshViewerRowsMs, startViewerCountFlush, type ViewerCountFlush, type ViewerCountFlushOptions } from "./viewerCountFlush";
