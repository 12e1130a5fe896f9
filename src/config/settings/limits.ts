import { area, integer } from "../declare";

/** Highest accepted MAX_PROFILES_PER_STREAM and MAX_TARGETS_PER_STREAM: each is an ffmpeg output. */
export const MAX_LIMIT_SETTING = 100;

// Per-key API rate limit and per-stream and per-user caps (issue 8: abuse limits). The rate
// defaults leave room for a busy dashboard or SDK script: a client has to keep up more than 50
// requests a second, or send 100 at once, to see a 429.
export const limits = area("limits", {
  API_RATE_LIMIT: integer({
    default: 50,
    min: 0,
    max: 100_000,
    unit: "requests per second; 0 disables",
    doc: 'API requests per second allowed to each API key (a token bucket; `0` turns the limit off). Beyond it: `429` with `{"errors":["rate limit exceeded: … retry after N s"]}` and a `Retry-After` header (whole seconds). Requests without a valid key (`401`) count against no key.',
  }).at("limits.apiRatePerSecond"),
  API_RATE_BURST: integer({
    default: 100,
    min: 1,
    max: 1_000_000,
    unit: "requests",
    doc: "Requests one API key may send at once before `API_RATE_LIMIT` applies (the bucket's size).",
  }).at("limits.apiRateBurst"),
  MAX_PROFILES_PER_STREAM: integer({
    default: 5,
    min: 1,
    max: MAX_LIMIT_SETTING,
    doc: "Profiles (renditions) a stream may have; more is a `422` naming this setting.",
  }).at("limits.maxProfilesPerStream"),
  MAX_TARGETS_PER_STREAM: integer({
    default: 10,
    min: 0,
    max: MAX_LIMIT_SETTING,
    doc: "Multistream targets a stream may reference; more is a `422` naming this setting.",
  }).at("limits.maxTargetsPerStream"),
  MAX_LIVE_STREAMS_PER_USER: integer({
    default: 10,
    min: 1,
    max: 10_000,
    doc: "Streams of one user live at once (sessions waiting for their publisher count); a publish beyond it is refused with `NetStream.Publish.Rejected` naming the limit.",
  }).at("limits.maxLiveStreamsPerUser"),
  // Each pull is an ffmpeg (about 45 MB) reading a source a tenant chose: counted before it
  // starts, with MAX_LIVE_STREAMS_PER_USER per user, and this cap for the node as a whole.
  MAX_PULLS_PER_NODE: integer({
    default: 50,
    min: 1,
    max: 10_000,
    doc: "Pulled streams one ingest node reads at once, all users together (one ffmpeg each, about 45 MB); a pull beyond it waits and retries with back-off, its status naming the setting. A user's pulls also count against `MAX_LIVE_STREAMS_PER_USER` before they start.",
  }).at("limits.maxPullsPerNode"),
  MAX_STREAMS_PER_USER: integer({
    default: 1000,
    min: 1,
    max: 10_000_000,
    doc: "Streams one user may have; one more is a `400` naming the setting.",
  }).at("limits.maxStreamsPerUser"),
  MAX_WEBHOOKS_PER_USER: integer({
    default: 20,
    min: 0,
    max: 100_000,
    doc: "Webhooks one user may have; one more is a `400` naming the setting (`at most 20 webhooks per user (MAX_WEBHOOKS_PER_USER); this user has 20: delete some first`).",
  }).at("limits.maxWebhooksPerUser"),
  MAX_TARGETS_PER_USER: integer({
    default: 100,
    min: 0,
    max: 1_000_000,
    doc: "Multistream targets one user may have (inline target specs count too); one more is a `400` naming the setting.",
  }).at("limits.maxTargetsPerUser"),
  MAX_SIGNING_KEYS_PER_USER: integer({
    default: 100,
    min: 0,
    max: 100_000,
    doc: "Playback signing keys one user may have (each is looked up by every JWT playback); one more is a `400` naming the setting.",
  }).at("limits.maxSigningKeysPerUser"),
  // Playback under hostile load: what anonymous viewers can make a node spend.
  PLAYBACK_WEBHOOK_RATE: integer({
    default: 20,
    min: 1,
    max: 100_000,
    unit: "questions per second",
    doc: "New access keys a `webhook` playback policy's webhook is asked about per playback id a second (a burst of twice this). Past it, or past `PLAYBACK_WEBHOOK_CONCURRENCY`, a new viewer gets `503` with `Retry-After`, never `401`; viewers already let in are not counted.",
  }).at("limits.webhookQuestionRate"),
  PLAYBACK_WEBHOOK_CONCURRENCY: integer({
    default: 16,
    min: 1,
    max: 10_000,
    unit: "questions",
    doc: "Questions about one playback id awaiting its webhook's answer at once.",
  }).at("limits.webhookQuestionsInFlight"),
  PLAYBACK_WEBHOOK_NODE_RATE: integer({
    default: 100,
    min: 1,
    max: 100_000,
    unit: "questions per second",
    doc: "New access-key questions a second on this node, all streams together (a burst of twice this).",
  }).at("limits.nodeWebhookQuestionRate"),
  PLAYBACK_WEBHOOK_NODE_CONCURRENCY: integer({
    default: 48,
    min: 1,
    max: 10_000,
    unit: "questions",
    doc: "Access-key questions awaiting an answer on this node at once. Under the 64 connections the policy sender keeps per webhook host, so re-checks of viewers already let in always find one.",
  }).at("limits.nodeWebhookQuestionsInFlight"),
  BLOCKING_WAITS_PER_PLAYBACK: integer({
    default: 2000,
    min: 1,
    max: 1_000_000,
    unit: "requests",
    doc: "LL-HLS requests of one playback id held open at once (blocking playlist reloads and preload-hint part requests, about 20 KB each); past it `503` with `Retry-After`.",
  }).at("limits.blockingWaitsPerPlayback"),
  BLOCKING_WAITS_PER_CLIENT: integer({
    default: 100,
    min: 1,
    max: 1_000_000,
    unit: "requests",
    doc: "Held-open LL-HLS requests from one client address (a player holds one or two per rendition it plays); behind a reverse proxy, the address Express sees (`req.ip`).",
  }).at("limits.blockingWaitsPerClient"),
  BLOCKING_WAITS_PER_NODE: integer({
    default: 5000,
    min: 1,
    max: 1_000_000,
    unit: "requests",
    doc: "Held-open LL-HLS requests on this node in all.",
  }).at("limits.blockingWaitsPerNode"),
  PUBLIC_MAX_CONNECTIONS: integer({
    default: 20_000,
    min: 0,
    max: 10_000_000,
    unit: "connections; 0: no cap",
    doc: "Open connections the public port accepts (`server.maxConnections`); more are closed as they arrive. Idle keep-alive connections count until they close (65 s idle); one HTTP/2 connection carries a player's requests (at most 128 at once). Keep it under the process's open-file limit.",
  }).at("limits.publicMaxConnections"),
  MAX_RENDITION_WIDTH: integer({
    default: 1920,
    min: 16,
    max: 7680,
    unit: "pixels",
    doc: "The largest rendition a profile may ask for, its long side; more is a `422` naming the setting.",
  }).at("limits.maxRenditionWidth"),
  MAX_RENDITION_HEIGHT: integer({
    default: 1080,
    min: 16,
    max: 7680,
    unit: "pixels",
    doc: "The largest rendition a profile may ask for, its short side; more is a `422` naming the setting.",
  }).at("limits.maxRenditionHeight"),
  MAX_RENDITION_FPS: integer({
    default: 60,
    min: 1,
    max: 240,
    unit: "frames per second",
    doc: "The largest frame rate a profile may ask for; more is a `422` naming the setting.",
  }).at("limits.maxRenditionFps"),
  // Clips (POST /clip, src/assets) are copies on this server's disk (or the bucket): a count and
  // a byte budget per user, so that one tenant cannot fill DATA_DIR and end everyone's sessions.
  MAX_ASSETS_PER_USER: integer({
    default: 1000,
    min: 0,
    max: 10_000_000,
    doc: "Assets (clips) one user may have, those being made included; one more `POST /clip` is a `400` naming the setting.",
  }).at("limits.maxAssetsPerUser"),
  MAX_CLIP_MB_PER_USER: integer({
    default: 10_240,
    min: 0,
    max: 100_000_000,
    unit: "MiB",
    doc: "Bytes one user's clips may hold, each counted at its MP4's size (its HLS copy takes about as much again): a clip being made counts at its estimate (its source's bytes over its range), a ready one at its real size. A `POST /clip` that would pass it is a `400` naming the setting.",
  }).at("limits.maxClipBytesPerUser", (mb) => mb * 1024 * 1024),
});
