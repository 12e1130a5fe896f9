import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import net from "node:net";
import path from "node:path";
import { z } from "zod";
import { allowHostEntry, type OutboundSettings } from "../outbound";
import { MAX_RECONNECT_WINDOW_SECONDS } from "../shapes";
import type { S3Settings } from "../storage";

// The operator interface of DESIGN.md: every setting comes from the environment, is read
// once at start-up and validated here, so a bad value stops the service with a clear message
// instead of surfacing later as a strange failure.

const port = (name: string, fallback: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return fallback;
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0 || n > 65535) {
        ctx.addIssue({ code: "custom", message: `${name} must be a port number (0-65535), got "${v}"` });
        return z.NEVER;
      }
      return n;
    });

const optionalUrl = (name: string, protocols: string[]) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return undefined;
      let url: URL;
      try {
        url = new URL(v);
      } catch {
        ctx.addIssue({ code: "custom", message: `${name} must be a URL, got "${v}"` });
        return z.NEVER;
      }
      if (!protocols.includes(url.protocol)) {
        ctx.addIssue({
          code: "custom",
          message: `${name} must use ${protocols.map((p) => p + "//").join(" or ")}, got "${v}"`,
        });
        return z.NEVER;
      }
      return v.replace(/\/+$/, "");
    });

const integer = (name: string, fallback: number, min: number, max: number, unit = "") =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return fallback;
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: "custom", message: `${name} must be an integer from ${min} to ${max}${unit}, got "${v}"` });
        return z.NEVER;
      }
      return n;
    });

const flag = (name: string, fallback = false) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return fallback;
      if (["1", "true", "yes", "on"].includes(v.toLowerCase())) return true;
      if (["0", "false", "no", "off"].includes(v.toLowerCase())) return false;
      ctx.addIssue({ code: "custom", message: `${name} must be true or false (1 or 0), got "${v}"` });
      return z.NEVER;
    });

/** A UDP port range, "first-last" (or one port); undefined when unset. */
const portRange = (name: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === "") return undefined;
      const m = /^\s*(\d{1,5})\s*(?:-\s*(\d{1,5})\s*)?$/.exec(v);
      const first = m ? Number(m[1]) : NaN;
      const last = m ? Number(m[2] ?? m[1]) : NaN;
      if (!(first >= 1024 && last <= 65535 && first <= last)) {
        ctx.addIssue({ code: "custom", message: `${name} must be a port range "first-last" within 1024-65535, got "${v}"` });
        return z.NEVER;
      }
      return { first, last };
    });

const ipAddress = (name: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return undefined;
      if (net.isIP(v) === 0) {
        ctx.addIssue({ code: "custom", message: `${name} must be an IP address, got "${v}"` });
        return z.NEVER;
      }
      return v;
    });

/** WEBRTC_ICE_SERVERS: stun: and turn(s): URLs, comma-separated. */
const iceServerList = (name: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      const entries = (v ?? "").split(",").map((e) => e.trim()).filter((e) => e !== "");
      const bad = entries.filter((e) => !/^(stuns?|turns?):[^\s<>"@]+$/.test(e));
      if (bad.length > 0) {
        ctx.addIssue({ code: "custom", message: `${name} must list stun:, stuns:, turn: or turns: URLs separated by commas, got ${bad.map((b) => `"${b}"`).join(", ")}` });
        return z.NEVER;
      }
      return entries;
    });

/** DESTINATION_ALLOW_HOSTS: comma-separated host names and IP addresses, each checked. */
const hostList = (name: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      const entries = (v ?? "").split(",").map((e) => e.trim()).filter((e) => e !== "");
      const bad = entries.filter((e) => allowHostEntry(e) === undefined);
      if (bad.length > 0) {
        ctx.addIssue({
          code: "custom",
          message: `${name} must list host names or IP addresses separated by commas (exact hosts: no ranges, ports or URLs), got ${bad.map((b) => `"${b}"`).join(", ")}`,
        });
        return z.NEVER;
      }
      return entries.map((e) => allowHostEntry(e)!);
    });

/** Per-key API rate limit and per-stream and per-user caps (issue 8: abuse limits). */
export interface LimitSettings {
  /** Tokens added to each API key's bucket per second; 0 turns the rate limit off. */
  apiRatePerSecond: number;
  /** Requests a key may send at once after being idle (the bucket's size). */
  apiRateBurst: number;
  maxProfilesPerStream: number;
  maxTargetsPerStream: number;
  /** Concurrent live publishes of one user's streams. */
  maxLiveStreamsPerUser: number;
  /** Objects one user may have: each costs storage, and webhooks and targets cost work per event or session. */
  maxStreamsPerUser: number;
  maxWebhooksPerUser: number;
  maxTargetsPerUser: number;
  /** Playback signing keys one user may have (each is looked up by every JWT playback). */
  maxSigningKeysPerUser: number;
  /** The largest rendition a profile may ask for: its long side, short side and frame rate (1080p60). */
  maxRenditionWidth: number;
  maxRenditionHeight: number;
  maxRenditionFps: number;
}


/** What a process may do (ONAIR_ROLES). */
export const ROLES = ["api", "ingest", "worker"] as const;
export type Role = (typeof ROLES)[number];

export const DEFAULT_LIMITS: LimitSettings = {
  apiRatePerSecond: 50,
  apiRateBurst: 100,
  maxProfilesPerStream: 5,
  maxRenditionWidth: 1920,
  maxRenditionHeight: 1080,
  maxRenditionFps: 60,
  maxTargetsPerStream: 10,
  maxLiveStreamsPerUser: 10,
  maxStreamsPerUser: 1000,
  maxWebhooksPerUser: 20,
  maxTargetsPerUser: 100,
  maxSigningKeysPerUser: 100,
};

/** Highest accepted MAX_PROFILES_PER_STREAM and MAX_TARGETS_PER_STREAM: each is an ffmpeg output. */
export const MAX_LIMIT_SETTING = 100;

const envSchema = z.object({
  PORT: port("PORT", 8080),
  RTMP_PORT: port("RTMP_PORT", 1935),
  // The operator's listener (/metrics, /readyz): loopback by default, off the public port.
  ADMIN_PORT: port("ADMIN_PORT", -1),
  ADMIN_HOST: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? "127.0.0.1" : v)),
  METRICS_TOKEN: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return undefined;
      if (v.length < 16 || /\s/.test(v)) {
        ctx.addIssue({ code: "custom", message: "METRICS_TOKEN must be at least 16 characters, without spaces" });
        return z.NEVER;
      }
      return v;
    }),
  HOST: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? "0.0.0.0" : v)),
  DATA_DIR: z
    .string()
    .optional()
    .transform((v) => path.resolve(v === undefined || v === "" ? "./storage" : v)),
  PUBLIC_URL: optionalUrl("PUBLIC_URL", ["http:", "https:"]),
  RTMP_PUBLIC_URL: optionalUrl("RTMP_PUBLIC_URL", ["rtmp:", "rtmps:"]),
  REDIS_URL: optionalUrl("REDIS_URL", ["redis:", "rediss:"]),
  /** State on PostgreSQL instead of the embedded SQLite file (DATA_DIR/onair.db). */
  DATABASE_URL: optionalUrl("DATABASE_URL", ["postgres:", "postgresql:"]),
  ONAIR_ROLES: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === "") return [...ROLES];
      const roles = v.split(",").map((r) => r.trim().toLowerCase()).filter(Boolean);
      const unknown = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
      if (unknown.length > 0 || roles.length === 0) {
        ctx.addIssue({ code: "custom", message: `ONAIR_ROLES must list some of ${ROLES.join(", ")} (comma-separated), got "${v}"` });
        return z.NEVER;
      }
      return ROLES.filter((r) => roles.includes(r));
    }),
  NODE_ID: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return undefined;
      if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(v)) {
        ctx.addIssue({ code: "custom", message: `NODE_ID must be 1-64 letters, digits or _ . : -, got "${v}"` });
        return z.NEVER;
      }
      return v;
    }),
  INTERNAL_URL: optionalUrl("INTERNAL_URL", ["http:", "https:"]),
  // Recordings in S3-compatible object storage (both set), local disk otherwise.
  S3_ENDPOINT: optionalUrl("S3_ENDPOINT", ["http:", "https:"]),
  S3_BUCKET: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return undefined;
      if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(v)) {
        ctx.addIssue({ code: "custom", message: `S3_BUCKET must be a bucket name (3-63 lower-case letters, digits, . and -), got "${v}"` });
        return z.NEVER;
      }
      return v;
    }),
  S3_REGION: z.string().optional().transform((v) => (v ? v : "us-east-1")),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  S3_FORCE_PATH_STYLE: flag("S3_FORCE_PATH_STYLE", true),
  NODE_HEARTBEAT_SECONDS: integer("NODE_HEARTBEAT_SECONDS", 5, 1, 60, " (seconds)"),
  NODE_LEASE_SECONDS: integer("NODE_LEASE_SECONDS", 15, 2, 600, " (seconds)"),
  CONTROL_POLL_SECONDS: integer("CONTROL_POLL_SECONDS", 5, 1, 60, " (seconds)"),
  REDIS_PREFIX: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return "onair";
      if (!/^[A-Za-z0-9_.:-]{1,100}$/.test(v)) {
        ctx.addIssue({ code: "custom", message: `REDIS_PREFIX must be 1-100 letters, digits or _ . : -, got "${v}"` });
        return z.NEVER;
      }
      return v;
    }),
  // The outbound policy (src/outbound): private, loopback and other non-public destinations of
  // webhooks and multistream targets are refused unless one of these allows them.
  ALLOW_PRIVATE_DESTINATIONS: flag("ALLOW_PRIVATE_DESTINATIONS"),
  DESTINATION_ALLOW_HOSTS: hostList("DESTINATION_ALLOW_HOSTS"),
  // Replaced by the outbound policy. `true` asked for what is now the default, so it is taken
  // and ignored; `false` asked for private receivers, which now needs the settings above: a
  // start that would quietly refuse them stops instead, saying which to set.
  WEBHOOK_BLOCK_PRIVATE: flag("WEBHOOK_BLOCK_PRIVATE"),
  // Spec 8: retries for about 15 minutes, the first after about 5 s. Tests compress both.
  WEBHOOK_RETRY_FIRST_MS: integer("WEBHOOK_RETRY_FIRST_MS", 5_000, 1, 3_600_000, " (ms)"),
  WEBHOOK_RETRY_WINDOW_MS: integer("WEBHOOK_RETRY_WINDOW_MS", 15 * 60_000, 0, 7 * 24 * 3_600_000, " (ms)"),
  // At most 30 s: the embedded queue's 60 s lease must outlast an attempt.
  WEBHOOK_TIMEOUT_MS: integer("WEBHOOK_TIMEOUT_MS", 10_000, 1, 30_000, " (ms)"),
  WEBHOOK_CONCURRENCY: integer("WEBHOOK_CONCURRENCY", 16, 0, 1000),
  FFMPEG_PATH: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? undefined : v)),
  // HTTP/2 over TLS on the public port (PEM files); both or neither. Without: HTTP/1.1.
  TLS_CERT: z.string().optional().transform((v) => (v === undefined || v === "" ? undefined : v)),
  TLS_KEY: z.string().optional().transform((v) => (v === undefined || v === "" ? undefined : v)),
  // Low-Latency HLS (parts of 0.2 s, blocking reload) by default; false: plain fMP4 HLS.
  HLS_LOW_LATENCY: flag("HLS_LOW_LATENCY", true),
  // 0: the mode's default (1 s with low latency, 2 s without).
  HLS_SEGMENT_SECONDS: integer("HLS_SEGMENT_SECONDS", 0, 1, 10, " (seconds)"),
  HLS_LIST_SIZE: integer("HLS_LIST_SIZE", 6, 2, 30),
  // The longest clip POST /clip makes (src/assets): a copy, so length costs disk, not CPU.
  MAX_CLIP_SECONDS: integer("MAX_CLIP_SECONDS", 600, 1, 24 * 3600, " (seconds)"),
  // How far back clips reach into a live session (its source segments kept on disk that long).
  CLIP_WINDOW_SECONDS: integer("CLIP_WINDOW_SECONDS", 300, 0, 24 * 3600, " (seconds)"),
  // Abuse limits (issue 8). The rate defaults leave room for a busy dashboard or SDK script:
  // a client has to keep up more than 50 requests a second, or send 100 at once, to see a 429.
  API_RATE_LIMIT: integer("API_RATE_LIMIT", DEFAULT_LIMITS.apiRatePerSecond, 0, 100_000, " (requests per second; 0 disables)"),
  API_RATE_BURST: integer("API_RATE_BURST", DEFAULT_LIMITS.apiRateBurst, 1, 1_000_000, " (requests)"),
  MAX_PROFILES_PER_STREAM: integer("MAX_PROFILES_PER_STREAM", DEFAULT_LIMITS.maxProfilesPerStream, 1, MAX_LIMIT_SETTING),
  MAX_TARGETS_PER_STREAM: integer("MAX_TARGETS_PER_STREAM", DEFAULT_LIMITS.maxTargetsPerStream, 0, MAX_LIMIT_SETTING),
  // 0 keeps recordings forever (the default: deleting a user's media is a choice to make).
  RECORDINGS_RETENTION_DAYS: integer("RECORDINGS_RETENTION_DAYS", 0, 0, 36_500, " (days)"),
  // Webhook attempts and delivered events are an audit trail, not data: a month by default.
  WEBHOOK_LOG_RETENTION_DAYS: integer("WEBHOOK_LOG_RETENTION_DAYS", 30, 0, 36_500, " (days)"),
  MAX_LIVE_STREAMS_PER_USER: integer("MAX_LIVE_STREAMS_PER_USER", DEFAULT_LIMITS.maxLiveStreamsPerUser, 1, 10_000),
  MAX_STREAMS_PER_USER: integer("MAX_STREAMS_PER_USER", DEFAULT_LIMITS.maxStreamsPerUser, 1, 10_000_000),
  MAX_WEBHOOKS_PER_USER: integer("MAX_WEBHOOKS_PER_USER", DEFAULT_LIMITS.maxWebhooksPerUser, 0, 100_000),
  MAX_TARGETS_PER_USER: integer("MAX_TARGETS_PER_USER", DEFAULT_LIMITS.maxTargetsPerUser, 0, 1_000_000),
  MAX_SIGNING_KEYS_PER_USER: integer("MAX_SIGNING_KEYS_PER_USER", DEFAULT_LIMITS.maxSigningKeysPerUser, 0, 100_000),
  // A viewer (a player session) counts as watching while it asked for a playlist this recently.
  VIEWER_WINDOW_SECONDS: integer("VIEWER_WINDOW_SECONDS", 30, 1, 600, " (seconds)"),
  // A gated stream's media URLs carry tokens that expire this long after the playlist naming
  // them was served: a segment URL copied out of a player stops working (players reload far sooner).
  PLAYBACK_TOKEN_SECONDS: integer("PLAYBACK_TOKEN_SECONDS", 30, 5, 3600, " (seconds)"),
  // Below this much free space on the data directory, live sessions end and publishes are
  // refused (while SQLite can still record it), and /readyz fails.
  STORAGE_MIN_FREE_MB: integer("STORAGE_MIN_FREE_MB", 64, 0, 1_000_000, " (MiB)"),
  // A recording's MP4 remux runs as long as it needs; one that writes nothing for this long is
  // stuck (a hung disk or mount) and is stopped, which counts as a failed attempt.
  FINALIZE_STALL_SECONDS: integer("FINALIZE_STALL_SECONDS", 30, 1, 3600, " (seconds)"),
  // A publisher that drops (a Wi-Fi blip; OBS retries every few seconds) continues its session
  // if it is back within this window; 0 ends the session as soon as it leaves.
  RECONNECT_WINDOW_SECONDS: integer("RECONNECT_WINDOW_SECONDS", 30, 0, MAX_RECONNECT_WINDOW_SECONDS, " (seconds)"),
  // A publisher that sends no media for this long (asleep, uplink gone, half-open socket) is
  // disconnected, and its stream's reconnect window starts.
  PUBLISH_MEDIA_TIMEOUT_SECONDS: integer("PUBLISH_MEDIA_TIMEOUT_SECONDS", 10, 1, 300, " (seconds)"),
  // Output megapixels per second this node transcodes at most; unset: 50 per core.
  TRANSCODE_BUDGET: integer("TRANSCODE_BUDGET", 0, 0, 1_000_000, " (megapixels per second; 0 or unset: 50 per core)"),
  MAX_RENDITION_WIDTH: integer("MAX_RENDITION_WIDTH", DEFAULT_LIMITS.maxRenditionWidth, 16, 7680, " (pixels)"),
  MAX_RENDITION_HEIGHT: integer("MAX_RENDITION_HEIGHT", DEFAULT_LIMITS.maxRenditionHeight, 16, 7680, " (pixels)"),
  MAX_RENDITION_FPS: integer("MAX_RENDITION_FPS", DEFAULT_LIMITS.maxRenditionFps, 1, 240, " (frames per second)"),
  // WebRTC (WHIP) ingest: the UDP ports its peers gather on (unset: any), the address they bind
  // (unset: every interface), the public address announced behind a 1:1 NAT, and the ICE
  // servers told to clients (OPTIONS and 201 Link headers).
  WEBRTC_UDP_PORTS: portRange("WEBRTC_UDP_PORTS"),
  WEBRTC_BIND_ADDRESS: ipAddress("WEBRTC_BIND_ADDRESS"),
  WEBRTC_PUBLIC_IP: ipAddress("WEBRTC_PUBLIC_IP"),
  WEBRTC_ICE_SERVERS: iceServerList("WEBRTC_ICE_SERVERS"),
  WEBRTC_ICE_USERNAME: z.string().optional().transform((v) => (v ? v : undefined)),
  WEBRTC_ICE_CREDENTIAL: z.string().optional().transform((v) => (v ? v : undefined)),
  // A WebRTC publisher that sends no media for this long has gone (no DELETE came).
  WEBRTC_MEDIA_TIMEOUT_SECONDS: integer("WEBRTC_MEDIA_TIMEOUT_SECONDS", 10, 2, 300, " (seconds)"),
  // SRT ingest, off unless set: each stream gets a listener on a port of this range (one
  // ffmpeg each, about 45 MB: the range is also the cap), callers authenticate with the
  // stream's SRT passphrase.
  SRT_PORTS: portRange("SRT_PORTS"),
  SRT_LATENCY_MS: integer("SRT_LATENCY_MS", 200, 20, 8000, " (ms)"),
  // The host put in streams' SRT URLs (unset: the host of RTMP_PUBLIC_URL, else of PUBLIC_URL).
  SRT_PUBLIC_HOST: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return undefined;
      if (!/^[A-Za-z0-9.:-]{1,253}$/.test(v)) {
        ctx.addIssue({ code: "custom", message: `SRT_PUBLIC_HOST must be a host name or IP address, got "${v}"` });
        return z.NEVER;
      }
      return v;
    }),
  LOG_LEVEL: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const levels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
      if (v === undefined || v === "") return "info";
      if (!(levels as readonly string[]).includes(v)) {
        ctx.addIssue({ code: "custom", message: `LOG_LEVEL must be one of ${levels.join(", ")}, got "${v}"` });
        return z.NEVER;
      }
      return v as (typeof levels)[number];
    }),
});

export interface Config {
  port: number;
  /** The operator's listener: /metrics, /readyz and /healthz. */
  adminPort: number;
  adminHost: string;
  /** When set, /metrics and /readyz also answer on the public port to `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  rtmpPort: number;
  host: string;
  dataDir: string;
  /** Explicit PUBLIC_URL, or undefined to derive it from the port actually bound. */
  publicUrlSetting: string | undefined;
  rtmpPublicUrlSetting: string | undefined;
  redisUrl: string | undefined;
  ffmpegPath: string | undefined;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  dbPath: string;
  /** DATABASE_URL: PostgreSQL; undefined keeps state in the SQLite file `dbPath`. */
  databaseUrl: string | undefined;
  /** What this process does (ONAIR_ROLES): serve the API, take publishes, run queue jobs. */
  roles: Role[];
  /** Names this process in the nodes table (NODE_ID; a fresh one per start by default). */
  nodeId: string;
  /** Where other nodes reach this one's HTTP (INTERNAL_URL); undefined: derived from HOST and the port bound. */
  internalUrlSetting: string | undefined;
  /** How often a node says it is alive and renews its streams' leases, ms. */
  heartbeatMs: number;
  /** A node not heard from for this long is gone: its streams may be taken, its sessions ended, ms. */
  leaseMs: number;
  /** How often an ingest node checks its live streams against the database (a missed notice), ms. */
  controlPollMs: number;
  /** S3_ENDPOINT and S3_BUCKET set: recordings are kept in that bucket too. */
  s3: S3Settings | undefined;
  /** Target length of live HLS segments, seconds (and the encoded renditions' keyframe interval). */
  hlsSegmentSeconds: number;
  /** LL-HLS: parts, blocking playlist reload, preload hints. */
  hlsLowLatency: boolean;
  /** TLS_CERT/TLS_KEY read: the public port speaks HTTP/2 over TLS (and HTTP/1.1). */
  tls: { cert: Buffer; key: Buffer } | undefined;
  /** Segments listed in a live playlist (the live window); older ones are deleted. */
  hlsListSize: number;
  /** The longest clip POST /clip makes, s (MAX_CLIP_SECONDS). */
  maxClipSeconds: number;
  /** How far back clips reach into a live session, s (CLIP_WINDOW_SECONDS; 0: the live playlist's window only). */
  clipWindowSeconds: number;
  /** Namespace of onair's keys in Redis (BullMQ's prefix). */
  redisPrefix: string;
  webhooks: WebhookSettings;
  /** What webhooks and multistream targets may connect to (src/outbound). */
  outbound: OutboundSettings;
  limits: LimitSettings;
  /** Recordings of sessions that ended longer ago than this are deleted; 0 keeps them. */
  recordingsRetentionDays: number;
  /** Webhook history older than this is deleted; 0 keeps it. */
  webhookLogRetentionDays: number;
  /** Free space the data directory must keep for live sessions to go on, bytes. */
  storageMinFreeBytes: number;
  /** A recording's MP4 remux that makes no progress this long is stopped, ms. */
  finalizeStallMs: number;
  /** Seconds a session waits for its publisher to reconnect (streams may set their own). */
  reconnectWindowSeconds: number;
  /** A publisher silent this long is disconnected, ms. */
  publishMediaTimeoutMs: number;
  /** Output megapixels per second this node transcodes at most; undefined: from the core count. */
  transcodeBudget: number | undefined;
  webrtc: WebRtcSettings;
  /** SRT_PORTS set: SRT ingest on. */
  srt: SrtSettings | undefined;
  /** A viewer counts while its player asked for a playlist within this long, ms. */
  viewerWindowMs: number;
  /** Lifetime of a gated stream's media tokens, s (PLAYBACK_TOKEN_SECONDS). */
  playbackTokenSeconds: number;
}

export interface WebRtcSettings {
  /** The UDP ports ICE gathers on; undefined: any. */
  udpPorts: { first: number; last: number } | undefined;
  /** The address peers bind; undefined: every interface. */
  bindAddress: string | undefined;
  /** Announced beside the host candidates, for a server behind a 1:1 NAT. */
  publicIp: string | undefined;
  /** Told to clients (Link headers), with the credentials for turn: entries. */
  iceServers: string[];
  iceUsername: string | undefined;
  iceCredential: string | undefined;
  /** A publisher silent this long has gone, ms. */
  mediaTimeoutMs: number;
}

export interface SrtSettings {
  ports: { first: number; last: number };
  latencyMs: number;
  publicHost: string | undefined;
}

export interface WebhookSettings {
  retryFirstMs: number;
  retryWindowMs: number;
  /** One attempt, connection to last byte read. */
  timeoutMs: number;
  /** Deliveries in flight at once in this process; 0 leaves them to `npm run worker`. */
  concurrency: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => i.message));
  }
  const e = parsed.data;
  const problems: string[] = [];
  if (e.NODE_LEASE_SECONDS < 2 * e.NODE_HEARTBEAT_SECONDS) {
    problems.push(`NODE_LEASE_SECONDS (${e.NODE_LEASE_SECONDS}) must be at least twice NODE_HEARTBEAT_SECONDS (${e.NODE_HEARTBEAT_SECONDS}): one late heartbeat must not cost a node its streams`);
  }
  if (e.ONAIR_ROLES.length < ROLES.length && e.DATABASE_URL === undefined) {
    problems.push(`ONAIR_ROLES=${e.ONAIR_ROLES.join(",")} needs DATABASE_URL: the other roles run in other processes, which share state only through PostgreSQL`);
  }
  if ((e.S3_ENDPOINT === undefined) !== (e.S3_BUCKET === undefined)) {
    problems.push("S3_ENDPOINT and S3_BUCKET go together: set both for recordings in object storage, or neither for the local disk");
  }
  if (e.WEBHOOK_CONCURRENCY === 0 && e.REDIS_URL === undefined) {
    problems.push("WEBHOOK_CONCURRENCY=0 needs REDIS_URL: with the embedded queue, nothing else would deliver webhooks");
  }
  if (env.WEBHOOK_BLOCK_PRIVATE !== undefined && env.WEBHOOK_BLOCK_PRIVATE !== "" && !e.WEBHOOK_BLOCK_PRIVATE) {
    problems.push(
      "WEBHOOK_BLOCK_PRIVATE is no longer read: private and loopback destinations are refused by default now; to allow them set ALLOW_PRIVATE_DESTINATIONS=true, or list the hosts in DESTINATION_ALLOW_HOSTS (and remove WEBHOOK_BLOCK_PRIVATE)",
    );
  }
  let tls: Config["tls"];
  if ((e.TLS_CERT === undefined) !== (e.TLS_KEY === undefined)) {
    problems.push("TLS_CERT and TLS_KEY go together: set both (PEM files) for HTTP/2 over TLS, or neither for plain HTTP");
  } else if (e.TLS_CERT !== undefined && e.TLS_KEY !== undefined) {
    try {
      tls = { cert: fs.readFileSync(e.TLS_CERT), key: fs.readFileSync(e.TLS_KEY) };
    } catch (err) {
      problems.push(`cannot read TLS_CERT or TLS_KEY: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    tls,
    port: e.PORT,
    // Unset: 10 above PORT (8090 for 8080), or a free port when PORT=0 picks one.
    adminPort: e.ADMIN_PORT === -1 ? (e.PORT === 0 ? 0 : Math.min(65535, e.PORT + 10)) : e.ADMIN_PORT,
    adminHost: e.ADMIN_HOST,
    metricsToken: e.METRICS_TOKEN,
    rtmpPort: e.RTMP_PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    publicUrlSetting: e.PUBLIC_URL,
    rtmpPublicUrlSetting: e.RTMP_PUBLIC_URL,
    redisUrl: e.REDIS_URL,
    ffmpegPath: e.FFMPEG_PATH,
    logLevel: e.LOG_LEVEL,
    dbPath: path.join(e.DATA_DIR, "onair.db"),
    databaseUrl: e.DATABASE_URL,
    roles: e.ONAIR_ROLES,
    nodeId: e.NODE_ID ?? `${os.hostname().replace(/[^A-Za-z0-9_.-]/g, "-").slice(0, 40)}-${crypto.randomBytes(3).toString("hex")}`,
    internalUrlSetting: e.INTERNAL_URL,
    heartbeatMs: e.NODE_HEARTBEAT_SECONDS * 1000,
    leaseMs: e.NODE_LEASE_SECONDS * 1000,
    controlPollMs: e.CONTROL_POLL_SECONDS * 1000,
    s3:
      e.S3_ENDPOINT && e.S3_BUCKET
        ? {
            endpoint: e.S3_ENDPOINT,
            bucket: e.S3_BUCKET,
            region: e.S3_REGION,
            accessKeyId: e.S3_ACCESS_KEY_ID ?? env.AWS_ACCESS_KEY_ID ?? "",
            secretAccessKey: e.S3_SECRET_ACCESS_KEY ?? env.AWS_SECRET_ACCESS_KEY ?? "",
            forcePathStyle: e.S3_FORCE_PATH_STYLE,
          }
        : undefined,
    hlsSegmentSeconds: e.HLS_SEGMENT_SECONDS || (e.HLS_LOW_LATENCY ? 1 : 2),
    hlsLowLatency: e.HLS_LOW_LATENCY,
    hlsListSize: e.HLS_LIST_SIZE,
    maxClipSeconds: e.MAX_CLIP_SECONDS,
    clipWindowSeconds: e.CLIP_WINDOW_SECONDS,
    redisPrefix: e.REDIS_PREFIX,
    webhooks: {
      retryFirstMs: e.WEBHOOK_RETRY_FIRST_MS,
      retryWindowMs: e.WEBHOOK_RETRY_WINDOW_MS,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      concurrency: e.WEBHOOK_CONCURRENCY,
    },
    outbound: { allowPrivate: e.ALLOW_PRIVATE_DESTINATIONS, allowHosts: e.DESTINATION_ALLOW_HOSTS },
    recordingsRetentionDays: e.RECORDINGS_RETENTION_DAYS,
    storageMinFreeBytes: e.STORAGE_MIN_FREE_MB * 1024 * 1024,
    webhookLogRetentionDays: e.WEBHOOK_LOG_RETENTION_DAYS,
    finalizeStallMs: e.FINALIZE_STALL_SECONDS * 1000,
    reconnectWindowSeconds: e.RECONNECT_WINDOW_SECONDS,
    publishMediaTimeoutMs: e.PUBLISH_MEDIA_TIMEOUT_SECONDS * 1000,
    transcodeBudget: e.TRANSCODE_BUDGET === 0 ? undefined : e.TRANSCODE_BUDGET,
    webrtc: {
      udpPorts: e.WEBRTC_UDP_PORTS,
      bindAddress: e.WEBRTC_BIND_ADDRESS,
      publicIp: e.WEBRTC_PUBLIC_IP,
      iceServers: e.WEBRTC_ICE_SERVERS,
      iceUsername: e.WEBRTC_ICE_USERNAME,
      iceCredential: e.WEBRTC_ICE_CREDENTIAL,
      mediaTimeoutMs: e.WEBRTC_MEDIA_TIMEOUT_SECONDS * 1000,
    },
    viewerWindowMs: e.VIEWER_WINDOW_SECONDS * 1000,
    playbackTokenSeconds: e.PLAYBACK_TOKEN_SECONDS,
    srt: e.SRT_PORTS ? { ports: e.SRT_PORTS, latencyMs: e.SRT_LATENCY_MS, publicHost: e.SRT_PUBLIC_HOST } : undefined,
    limits: {
      apiRatePerSecond: e.API_RATE_LIMIT,
      apiRateBurst: e.API_RATE_BURST,
      maxProfilesPerStream: e.MAX_PROFILES_PER_STREAM,
      maxTargetsPerStream: e.MAX_TARGETS_PER_STREAM,
      maxLiveStreamsPerUser: e.MAX_LIVE_STREAMS_PER_USER,
      maxStreamsPerUser: e.MAX_STREAMS_PER_USER,
      maxWebhooksPerUser: e.MAX_WEBHOOKS_PER_USER,
      maxTargetsPerUser: e.MAX_TARGETS_PER_USER,
      maxSigningKeysPerUser: e.MAX_SIGNING_KEYS_PER_USER,
      maxRenditionWidth: e.MAX_RENDITION_WIDTH,
      maxRenditionHeight: e.MAX_RENDITION_HEIGHT,
      maxRenditionFps: e.MAX_RENDITION_FPS,
    },
  };
}

/** PUBLIC_URL, defaulting to the HTTP port the server actually bound (PORT=0 picks one). */
export function publicUrl(config: Config, boundPort: number): string {
  return config.publicUrlSetting ?? `${config.tls ? "https" : "http"}://localhost:${boundPort}`;
}

/** RTMP_PUBLIC_URL: the ingest base that broadcasters put in OBS. */
export function rtmpPublicUrl(config: Config, boundRtmpPort: number): string {
  return config.rtmpPublicUrlSetting ?? `rtmp://localhost:${boundRtmpPort}/live`;
}

/** Where state lives: PostgreSQL with DATABASE_URL, else the SQLite file in DATA_DIR. */
export function databaseLocation(config: Pick<Config, "databaseUrl" | "dbPath">): { url: string } | { file: string } {
  return config.databaseUrl ? { url: config.databaseUrl } : { file: config.dbPath };
}
