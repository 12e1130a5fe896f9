import fs from "node:fs";
import path from "node:path";
import type { S3Settings } from "../storage";
import { defaultsOf, parseSettings, place, schemaOf, type Parsed, type Placed } from "./declare";
import { limits, ROLES, SETTINGS } from "./settings";

export { MAX_LIMIT_SETTING, ROLES, type Role } from "./settings";

// The operator interface (docs/architecture.md#operator-interface): every setting comes from the environment, is read
// once at start-up and validated here, so a bad value stops the service with a clear message
// instead of surfacing later as a strange failure.
//
// Each setting is declared once, in its area's module under ./settings (see ./declare): its
// kind, default, bounds, doc line and place in Config. What several settings make together (a
// rule between them, a value derived from more than one) is the small functions below.

type Settings = typeof SETTINGS;
/** Every setting's parsed value, by environment variable. */
type Env = Parsed<Settings>;

const schema = schemaOf(SETTINGS);

/** A rule between settings: its line in the settings reference, and the problem when it is broken. */
export interface Rule {
  doc: string;
  problem(e: Env, env: NodeJS.ProcessEnv): string | undefined;
}

export const RULES: Rule[] = [
  {
    doc: "`NODE_LEASE_SECONDS` is at least twice `NODE_HEARTBEAT_SECONDS`: one late heartbeat must not cost a node its streams.",
    problem: (e) =>
      e.NODE_LEASE_SECONDS < 2 * e.NODE_HEARTBEAT_SECONDS
        ? `NODE_LEASE_SECONDS (${e.NODE_LEASE_SECONDS}) must be at least twice NODE_HEARTBEAT_SECONDS (${e.NODE_HEARTBEAT_SECONDS}): one late heartbeat must not cost a node its streams`
        : undefined,
  },
  {
    doc: "`ONAIR_ROLES` with fewer than all three roles needs `DATABASE_URL`: the other roles run in other processes, which share state only through PostgreSQL.",
    problem: (e) =>
      e.ONAIR_ROLES.length < ROLES.length && e.DATABASE_URL === undefined
        ? `ONAIR_ROLES=${e.ONAIR_ROLES.join(",")} needs DATABASE_URL: the other roles run in other processes, which share state only through PostgreSQL`
        : undefined,
  },
  {
    doc: "`S3_ENDPOINT` and `S3_BUCKET`: both (recordings in object storage) or neither (the local disk).",
    problem: (e) =>
      (e.S3_ENDPOINT === undefined) !== (e.S3_BUCKET === undefined)
        ? "S3_ENDPOINT and S3_BUCKET go together: set both for recordings in object storage, or neither for the local disk"
        : undefined,
  },
  {
    doc: "`WEBHOOK_CONCURRENCY=0` needs `REDIS_URL`: with the embedded queue, nothing else would deliver webhooks.",
    problem: (e) =>
      e.WEBHOOK_CONCURRENCY === 0 && e.REDIS_URL === undefined ? "WEBHOOK_CONCURRENCY=0 needs REDIS_URL: with the embedded queue, nothing else would deliver webhooks" : undefined,
  },
  {
    doc: "`WEBHOOK_BLOCK_PRIVATE=false` stops the start: private destinations now need `ALLOW_PRIVATE_DESTINATIONS=true` or `DESTINATION_ALLOW_HOSTS`.",
    problem: (e, env) =>
      env.WEBHOOK_BLOCK_PRIVATE !== undefined && env.WEBHOOK_BLOCK_PRIVATE !== "" && !e.WEBHOOK_BLOCK_PRIVATE
        ? "WEBHOOK_BLOCK_PRIVATE is no longer read: private and loopback destinations are refused by default now; to allow them set ALLOW_PRIVATE_DESTINATIONS=true, or list the hosts in DESTINATION_ALLOW_HOSTS (and remove WEBHOOK_BLOCK_PRIVATE)"
        : undefined,
  },
  {
    doc: "`TLS_CERT` and `TLS_KEY`: both (readable PEM files, HTTP/2 over TLS) or neither (plain HTTP).",
    problem: (e) =>
      (e.TLS_CERT === undefined) !== (e.TLS_KEY === undefined)
        ? "TLS_CERT and TLS_KEY go together: set both (PEM files) for HTTP/2 over TLS, or neither for plain HTTP"
        : undefined,
  },
];

/** TLS_CERT and TLS_KEY read (both set), or a problem. */
function readTls(e: Env, problems: string[]): { cert: Buffer; key: Buffer } | undefined {
  if (e.TLS_CERT === undefined || e.TLS_KEY === undefined) return undefined;
  try {
    return { cert: fs.readFileSync(e.TLS_CERT), key: fs.readFileSync(e.TLS_KEY) };
  } catch (err) {
    problems.push(`cannot read TLS_CERT or TLS_KEY: ${(err as Error).message}`);
    return undefined;
  }
}

/** The values made of more than one setting (or of one and something else: the TLS files, AWS_* keys). */
function derived(e: Env, env: NodeJS.ProcessEnv, tls: { cert: Buffer; key: Buffer } | undefined) {
  const s3: S3Settings | undefined =
    e.S3_ENDPOINT && e.S3_BUCKET
      ? {
          endpoint: e.S3_ENDPOINT,
          bucket: e.S3_BUCKET,
          region: e.S3_REGION,
          accessKeyId: e.S3_ACCESS_KEY_ID ?? env.AWS_ACCESS_KEY_ID ?? "",
          secretAccessKey: e.S3_SECRET_ACCESS_KEY ?? env.AWS_SECRET_ACCESS_KEY ?? "",
          forcePathStyle: e.S3_FORCE_PATH_STYLE,
        }
      : undefined;
  return {
    /** TLS_CERT/TLS_KEY read: the public port speaks HTTP/2 over TLS (and HTTP/1.1). */
    tls,
    /** The operator's listener: /metrics, /readyz and /healthz. Unset: 10 above PORT (8090 for 8080), or a free port when PORT=0 picks one. */
    adminPort: e.ADMIN_PORT === -1 ? (e.PORT === 0 ? 0 : Math.min(65535, e.PORT + 10)) : e.ADMIN_PORT,
    /** The SQLite file in DATA_DIR (unless DATABASE_URL). */
    dbPath: path.join(e.DATA_DIR, "onair.db"),
    /** S3_ENDPOINT and S3_BUCKET set: recordings are kept in that bucket too. */
    s3,
    /** Target length of live HLS segments, seconds (and the encoded renditions' keyframe interval). */
    hlsSegmentSeconds: e.HLS_SEGMENT_SECONDS || (e.HLS_LOW_LATENCY ? 1 : 2),
    /** SRT_PORTS set: SRT ingest on. */
    srt: e.SRT_PORTS
      ? {
          ports: e.SRT_PORTS,
          latencyMs: e.SRT_LATENCY_MS,
          publicHost: e.SRT_PUBLIC_HOST,
          perUser: e.SRT_PORTS_PER_USER ?? Math.max(1, Math.floor((e.SRT_PORTS.last - e.SRT_PORTS.first + 1) / 4)),
          idleMs: e.SRT_LISTENER_IDLE_SECONDS * 1000,
        }
      : undefined,
  };
}

/** The service's settings: each declared setting at its place, and the derived values. */
export type Config = Placed<Settings> & ReturnType<typeof derived>;
/** Per-key API rate limit and per-stream and per-user caps (issue 8: abuse limits). */
export type LimitSettings = Config["limits"];
export type WebRtcSettings = Config["webrtc"];
export type SrtSettings = NonNullable<Config["srt"]>;
export type WebhookSettings = Config["webhooks"];

export const DEFAULT_LIMITS: LimitSettings = defaultsOf(limits).limits;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = parseSettings(SETTINGS, env, schema);
  if (!parsed.ok) throw new ConfigError(parsed.problems);
  const e = parsed.parsed;
  const problems = RULES.map((rule) => rule.problem(e, env)).filter((p) => p !== undefined);
  const tls = readTls(e, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...place(SETTINGS, e), ...derived(e, env, tls) };
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
export function databaseLocation(config: Pick<Config, "databaseUrl" | "dbPath" | "nodeId">): { url: string; name: string } | { file: string } {
  // Named in pg_stat_activity as the node: an operator (or a fault test) sees whose connections are whose.
  return config.databaseUrl ? { url: config.databaseUrl, name: `onair ${config.nodeId}`.slice(0, 63) } : { file: config.dbPath };
}
