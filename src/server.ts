import path from "node:path";
import { createApp, RedisRateLimiter } from "./api";
import { publicUrl as resolvedPublicUrl, rtmpPublicUrl, type Config } from "./config";
import type { Store } from "./db";
import type { EventSink } from "./events";
import type { PullIngest } from "./ingest";
import type { Logger } from "./log";
import type { FfmpegLocation, ProcessRegistry } from "./media";
import type { Metrics } from "./metrics";
import { freshViewerRowsMs, type ViewerCounter } from "./playback";
import type { SessionManager } from "./sessions";
import { Shutdown, type ShutdownResult } from "./shutdown";
import * as w from "./wiring";

import { FIRST_KEY_FILE } from "./wiring";

export { FIRST_KEY_FILE };

export interface RunningServer {
  store: Store;
  port: number;
  publicUrl: string;
  apiUrl: string;
  rtmpUrl: string;
  /** The RTMP port actually bound (RTMP_PORT=0 picks one). */
  rtmpPort: number;
  /** The RTMPS port bound, when TLS_CERT and TLS_KEY are set (RTMPS_PORT=0 picks one). */
  rtmpsPort: number | undefined;
  /** The operator's listener (/metrics, /readyz, /healthz), as bound. */
  adminPort: number;
  /** e.g. http://127.0.0.1:8090 */
  adminUrl: string;
  /** This process in the nodes table (NODE_ID). */
  nodeId: string;
  ffmpeg: FfmpegLocation | undefined;
  sessions: SessionManager;
  /** Where domain events are raised (durable; each becomes webhook deliveries). */
  events: EventSink;
  /** Every process the server has running (ffmpeg). */
  processes: ProcessRegistry;
  /** The pulls of streams with a pull source (an ingest node). */
  pulls: PullIngest | undefined;
  /** What GET /metrics exposes (this server's own Prometheus registry). */
  metrics: Metrics;
  /** Concurrent viewers of the streams this node packages (fed by the HLS routes; written to viewer_counts every heartbeat). */
  viewers: ViewerCounter;
  /** Set when this start created the first user (empty data directory). */
  firstUser?: { name: string; apiKey: string };
  /** Runs the shutdown's phases (src/shutdown.ts); says whether everything stopped cleanly. Once: later calls answer the same. */
  stop(): Promise<ShutdownResult>;
}

export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  const shutdown = new Shutdown(log);
  try {
    return await start(config, log, shutdown);
  } catch (err) {
    // What had started is stopped, in the shutdown's order.
    await shutdown.run();
    throw err;
  }
}

/** The areas, in the order they start; each registers how its components stop. */
async function start(config: Config, log: Logger, shutdown: Shutdown): Promise<RunningServer> {
  const c = w.wiring(config, log, shutdown);
  // PUBLIC_URL as set, else known once HTTP listens (clips and recordings carry it).
  let publicUrl = config.publicUrlSetting ?? "";
  const links = () => publicUrl;
  const hlsDir = path.join(config.dataDir, "hls");

  const { store, firstUser, recordingSigner, signRecording } = await w.wireStorage(c);
  const { metrics, readers } = w.wireMetrics(c, store);
  const events = await w.wireEvents(c, store, metrics);
  const media = w.wireMedia(c);
  readers.processes = media.processes;
  const recordings = w.wireRecordings(c, store, events, metrics);
  const clips = w.wireClips(c, store, events, recordings, hlsDir, links);
  const live = await w.wireSessions(c, store, events, media, recordings, clips, metrics, hlsDir);
  Object.assign(readers, { sessions: live.sessions, rtmp: live.rtmp });
  const { cluster, node } = await w.wireCluster(c, store, live);
  const ingest = await w.wireIngest(c, store, events, media, live, metrics);
  const operator = await w.wireOperator(c, store, { storage: live.storage, ffmpeg: media.ffmpeg, rtmp: live.rtmp, metrics });
  const playback = w.wirePlayback(c, store, events, live, recordingSigner);
  readers.viewers = playback.viewers;

  const { pages, hlsOnly } = w.publicPages(c, store, { recordings, clips, live, whip: ingest.whip, operator, playback, signer: recordingSigner });
  const rateRedis = w.wireRateLimitRedis(c);
  const rateLimiter = rateRedis
    ? new RedisRateLimiter(rateRedis, { perSecond: config.limits.apiRatePerSecond, burst: config.limits.apiRateBurst }, config.redisPrefix, log)
    : undefined;
  const srt = w.srtUrls(config, () => live.rtmp.port);
  // A node without the api role serves HLS only: other nodes pass their viewers' requests to it.
  const app = c.has("api")
    ? createApp({ store, log, publicUrl: links, signRecording, live: live.sessions, limits: config.limits, outbound: events.outbound, rateLimiter, srt, viewerCountsFreshMs: freshViewerRowsMs(config.heartbeatMs), clips: clips.clips, webrtcPlayback: config.webrtc.playback, dvrWindowSeconds: config.dvrWindowSeconds }, pages, metrics)
    : hlsOnly();
  const port = await w.listenPublic(c, app);
  publicUrl = resolvedPublicUrl(config, port);
  node.internalUrl = config.internalUrlSetting ?? w.internalUrl(config, port);
  // Its RTMP, on the internal URL's host: other ingest nodes relay publishes of its streams there.
  if (c.has("ingest")) node.rtmpAddress = `${new URL(node.internalUrl).hostname}:${live.rtmp.port}`;
  await cluster.beatNow();

  // The queue workers once PUBLIC_URL is known: recording.ready and asset.ready carry URLs.
  w.startFinalizing(c, store, events, media, recordings, () => ({ publicUrl, sign: signRecording }));
  w.startClipping(c, store, events, media, clips, links);

  return {
    store,
    port,
    publicUrl,
    apiUrl: `${publicUrl}/api`,
    rtmpUrl: rtmpPublicUrl(config, live.rtmp.port),
    rtmpPort: live.rtmp.port,
    rtmpsPort: live.rtmp.tlsPort,
    adminPort: operator.adminPort,
    adminUrl: `http://${operator.adminAddress}`,
    nodeId: config.nodeId,
    ffmpeg: media.ffmpeg,
    sessions: live.sessions,
    events: events.events,
    processes: media.processes,
    pulls: ingest.pulls,
    metrics,
    viewers: playback.viewers,
    firstUser,
    stop: () => shutdown.run(),
  };
}

export function banner(s: RunningServer, dataDir: string): string {
  const lines = [
    "onair is running",
    `  API:          ${s.apiUrl}   (reference: ${s.publicUrl}/api/docs)`,
    `  RTMP ingest:  ${s.rtmpUrl}/<streamKey>`,
    `  HLS playback: ${s.publicUrl}/hls/<playbackId>/index.m3u8`,
    `  operator:     ${s.adminUrl}/metrics and /readyz   (ADMIN_PORT; loopback only by default)`,
    `  data:         ${dataDir}`,
    `  ffmpeg:       ${s.ffmpeg ? `${s.ffmpeg.path} (from ${s.ffmpeg.source})` : "not found: install ffmpeg or set FFMPEG_PATH"}`,
  ];
  if (s.firstUser) {
    lines.push(
      "",
      `  First start: created user "${s.firstUser.name}" with this API key (shown once; keep it):`,
      `  API key:      ${s.firstUser.apiKey}   (also in ${path.join(dataDir, FIRST_KEY_FILE)}, mode 0600)`,
      `  More keys:    npm run -s cli -- keys create <user>   (keys list, keys revoke <id>)`,
    );
  }
  return lines.join("\n");
}
