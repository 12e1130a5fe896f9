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
});
