import path from "node:path";
import { z } from "zod";

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

const envSchema = z.object({
  PORT: port("PORT", 8080),
  RTMP_PORT: port("RTMP_PORT", 1935),
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
  FFMPEG_PATH: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? undefined : v)),
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
  return {
    port: e.PORT,
    rtmpPort: e.RTMP_PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    publicUrlSetting: e.PUBLIC_URL,
    rtmpPublicUrlSetting: e.RTMP_PUBLIC_URL,
    redisUrl: e.REDIS_URL,
    ffmpegPath: e.FFMPEG_PATH,
    logLevel: e.LOG_LEVEL,
    dbPath: path.join(e.DATA_DIR, "onair.db"),
  };
}

/** PUBLIC_URL, defaulting to the HTTP port the server actually bound (PORT=0 picks one). */
export function publicUrl(config: Config, boundPort: number): string {
  return config.publicUrlSetting ?? `http://localhost:${boundPort}`;
}

/** RTMP_PUBLIC_URL: the ingest base that broadcasters put in OBS. */
export function rtmpPublicUrl(config: Config, boundRtmpPort: number): string {
  return config.rtmpPublicUrlSetting ?? `rtmp://localhost:${boundRtmpPort}/live`;
}
