import http from "node:http";
import type { AddressInfo } from "node:net";
import { createApp, type LiveControl } from "./api";
import { publicUrl, rtmpPublicUrl, type Config } from "./config";
import { openStore, type Store } from "./db";
import type { EventSink } from "./events";
import type { Logger } from "./log";
import { locateFfmpeg, type FfmpegLocation } from "./media/ffmpegLocator";

export interface RunningServer {
  store: Store;
  port: number;
  publicUrl: string;
  apiUrl: string;
  rtmpUrl: string;
  ffmpeg: FfmpegLocation | undefined;
  /** Set when this start created the first user (empty data directory). */
  firstUser?: { name: string; apiKey: string };
  stop(): Promise<void>;
}

/** Live sessions arrive with RTMP ingest; until a stream can be live there is nothing to end. */
const noLiveSessions: LiveControl = { interrupt: () => {} };

export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  const ffmpeg = locateFfmpeg(config.ffmpegPath);
  const store = openStore(config.dbPath);

  let firstUser: RunningServer["firstUser"];
  if (store.users.count() === 0) {
    const user = store.users.getOrCreate("admin");
    firstUser = { name: user.name, apiKey: store.apiKeys.create(user.id) };
    log.info({ userId: user.id }, "empty data directory: created the first user and API key");
  }

  let resolvedPublicUrl = config.publicUrlSetting ?? "";

  // --- events → webhook deliveries (src/events, src/queue, src/webhooks) ---
  const events: EventSink = {
    raise: (name, streamId, payload) => log.info({ event: name, streamId, payload }, "event raised"),
  };
  const stopEvents = async () => {};
  // --- end of events ---

  const app = createApp({ store, log, publicUrl: () => resolvedPublicUrl, live: noLiveSessions });
  const server = http.createServer(app);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  resolvedPublicUrl = publicUrl(config, port);

  let stopped: Promise<void> | undefined;
  return {
    store,
    port,
    publicUrl: resolvedPublicUrl,
    apiUrl: `${resolvedPublicUrl}/api`,
    rtmpUrl: rtmpPublicUrl(config, config.rtmpPort),
    ffmpeg,
    firstUser,
    stop: () =>
      (stopped ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          // Requests still running after 5 s are cut: shutdown must not hang on a slow client.
          setTimeout(() => server.closeAllConnections(), 5_000).unref();
        });
        await stopEvents();
        store.close();
      })()),
  };
}

export function banner(s: RunningServer, dataDir: string): string {
  const lines = [
    "onair is running",
    `  API:          ${s.apiUrl}   (reference: ${s.publicUrl}/api/docs)`,
    `  RTMP ingest:  ${s.rtmpUrl}/<streamKey>`,
    `  HLS playback: ${s.publicUrl}/hls/<playbackId>/index.m3u8`,
    `  data:         ${dataDir}`,
    `  ffmpeg:       ${s.ffmpeg ? `${s.ffmpeg.path} (from ${s.ffmpeg.source})` : "not found: install ffmpeg or set FFMPEG_PATH"}`,
  ];
  if (s.firstUser) {
    lines.push(
      "",
      `  First start: created user "${s.firstUser.name}" with this API key (shown once; keep it):`,
      `  API key:      ${s.firstUser.apiKey}`,
      `  More keys:    npm run -s cli -- keys create <user>`,
    );
  }
  return lines.join("\n");
}
