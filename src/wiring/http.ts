import type net from "node:net";
import type { AddressInfo } from "node:net";
import os from "node:os";
import express from "express";
import { rtmpPublicUrl, type Config } from "../config";
import type { Store } from "../db";
import { assetsRouter, broadcastRouter, createPublicServer, dashboardRouter, operatorGate, playerRouter, recordingsRouter, whipRouter } from "../http";
import type { WhipIngest } from "../ingest";
import { iceServerLinks } from "../webrtc";
import { livenessRouter } from "../health";
import type { ClipsArea } from "./clips";
import type { Wiring } from "./context";
import type { OperatorArea } from "./operator";
import type { PlaybackArea } from "./playback";
import type { RecordingUrlSigner } from "../recordings";
import type { RecordingsArea } from "./recordings";
import type { SessionsArea } from "./sessions";

export interface PublicPages {
  /** Everything the public port serves besides the API. */
  pages: express.Router[];
  /** What a node without the api role serves: other nodes pass their viewers' requests to it. */
  hlsOnly(): express.Express;
}

/** The public port's pages: HLS, recordings, assets, the operator's routes behind their gate, the player, the dashboard, WHIP. */
export function publicPages(
  { config }: Wiring,
  store: Store,
  parts: { recordings: RecordingsArea; clips: ClipsArea; live: SessionsArea; whip: WhipIngest | undefined; operator: OperatorArea; playback: PlaybackArea; signer: RecordingUrlSigner },
): PublicPages {
  const { recordings, clips, live, operator, playback } = parts;
  // WHIP on every node that takes publishes (an ingest-only node too); others answer 503.
  const whipRoutes = whipRouter({
    whip: parts.whip,
    iceLinks: iceServerLinks(config.webrtc.iceServers, config.webrtc.iceUsername, config.webrtc.iceCredential),
    publicIceLinks: iceServerLinks(config.webrtc.iceServers),
    streamState: (streamId) => {
      const session = live.sessions.liveSession(streamId);
      const health = live.sessions.health(streamId);
      return { isActive: session?.isLive ?? false, ...(health ? { isHealthy: health.isHealthy, issues: health.issues } : {}) };
    },
  });
  const pages = [
    playback.hls,
    recordingsRouter(store, recordings.recordingsDir, parts.signer, recordings.objects.kind === "s3" ? recordings.objects : undefined),
    assetsRouter(store, clips.assetsDir, clips.assetObjects.kind === "s3" ? clips.assetObjects : undefined),
    livenessRouter(),
    operatorGate(config.metricsToken, () => operator.adminAddress),
    ...operator.routers,
    playerRouter(store, (sessionId) => parts.signer.sign(sessionId), config.dvrWindowSeconds),
    dashboardRouter(() => rtmpPublicUrl(config, live.rtmp.port)),
    broadcastRouter(),
    whipRoutes,
    playback.whep,
  ];
  return { pages, hlsOnly: () => express().disable("x-powered-by").use(playback.hls, whipRoutes, playback.whep, livenessRouter()) };
}

/** The public listener (PORT, with TLS when set); resolves with the port bound. */
export async function listenPublic({ config, stops }: Wiring, app: express.Express): Promise<number> {
  const server = createPublicServer(app, config.tls, { maxConnections: config.limits.publicMaxConnections });
  await listen(server.server, config.port, config.host);
  stops.register("drain", "public HTTP listener", () => server.close(3_000));
  return (server.server.address() as AddressInfo).port;
}

/** With Redis, every API node counts the same rate-limit bucket per key (a key behind N nodes must not get N times its rate). */
export function wireRateLimitRedis({ config, stops, has }: Wiring): import("ioredis").Redis | undefined {
  if (!config.redisUrl || !has("api")) return undefined;
  const redis = sharedRateRedis(config.redisUrl);
  stops.register("stores", "rate limit Redis connection", () => redis.disconnect());
  return redis;
}

/** The rate limit's own connection: no offline queue and a short timeout, so a Redis outage fails over to the local bucket at once. */
function sharedRateRedis(url: string): import("ioredis").Redis {
  // Loaded only with REDIS_URL, as the queue adapter is (about 170 ms).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Redis } = require("ioredis") as typeof import("ioredis");
  const redis = new Redis(url, { enableOfflineQueue: false, commandTimeout: 500, maxRetriesPerRequest: 1, retryStrategy: (n) => Math.min(n * 200, 2_000) });
  redis.on("error", () => undefined); // the limiter says when it falls back
  return redis;
}

/** SRT_PORTS set: the ports streams get and the URL callers use (SRT_PUBLIC_HOST, else RTMP_PUBLIC_URL's or PUBLIC_URL's host). */
export function srtUrls(
  config: Config,
  rtmpPort: () => number,
): { ports: NonNullable<Config["srt"]>["ports"]; perUser: number; idleMs: number; url(port: number, passphrase: string): string } | undefined {
  const { srt } = config;
  if (!srt) return undefined;
  return {
    ports: srt.ports,
    perUser: srt.perUser,
    idleMs: srt.idleMs,
    url: (port, passphrase) => {
      const host = srt.publicHost ?? new URL(config.rtmpPublicUrlSetting ?? config.publicUrlSetting ?? rtmpPublicUrl(config, rtmpPort())).hostname;
      return `srt://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}?passphrase=${encodeURIComponent(passphrase)}&latency=${srt.latencyMs * 1000}`;
    },
  };
}

export function listen(server: net.Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
}

/** Where other nodes reach this one: HOST as bound, or this machine's name when HOST is a wildcard. */
export function internalUrl(config: Config, port: number): string {
  const host = ["0.0.0.0", "::", ""].includes(config.host) ? os.hostname() : config.host;
  return `${config.tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${port}`;
}
