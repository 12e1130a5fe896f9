import { dropTestDatabase, testDatabaseEnv } from "../helpers/database";
import fs from "node:fs";
import { loadConfig } from "../../src/config";
import { createLogger } from "../../src/log";
import { parseMediaPlaylist } from "../../src/media/playlists";
import { startServer, type RunningServer } from "../../src/server";
import { apiClient, LOOPBACK_DESTINATIONS, tempDir, type Api } from "../helpers/server";
import { startReceiver, type Receiver } from "../helpers/receiver";

export interface Harness {
  server: RunningServer;
  dataDir: string;
  api: Api;
  rtmp: string;
  /** Every log line the server wrote, at debug level: what an operator would read. */
  logs: string[];
  /** Receives every multistream.* and stream.* event. */
  receiver: Receiver;
  hls(playbackId: string, file?: string): string;
  /** Stops the server (and the receiver, unless `keepReceiver`); the data stays until `dispose`. */
  stop(opts?: { keepReceiver?: boolean }): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * A real server, like test/helpers/server.ts's, but logging at debug into memory (so a test
 * can read what the operator would), with a real webhook receiver registered for all events.
 */
export async function startHarness(opts: { env?: Record<string, string>; dataDir?: string; receiver?: Receiver } = {}): Promise<Harness> {
  const dataDir = opts.dataDir ?? tempDir("onair-ms-");
  const env = opts.env ?? {};
  const logs: string[] = [];
  // No reconnect window unless a test asks for one (a stream's reconnectWindow, or env).
  const database = await testDatabaseEnv(dataDir);
  const config = loadConfig({ DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", HLS_SEGMENT_SECONDS: "1", RECONNECT_WINDOW_SECONDS: "0", WEBRTC_STUN_PORT: "0", ...LOOPBACK_DESTINATIONS, ...database, ...env });
  const server = await startServer(config, createLogger("debug", { write: (line: string) => void logs.push(line) }));
  const key = server.firstUser?.apiKey ?? (await server.store.apiKeys.create((await server.store.users.getOrCreate("admin")).id));
  const api = apiClient(`http://127.0.0.1:${server.port}/api`, key);
  // A restart on the same data keeps its receiver, registered already.
  const receiver = opts.receiver ?? (await startReceiver());
  if (!opts.receiver) {
    const hook = await api("POST", "/webhook", { name: "all", url: receiver.url });
    if (hook.status !== 200) throw new Error(`webhook create: ${hook.status} ${hook.text}`);
  }
  return {
    server,
    dataDir,
    api,
    rtmp: `rtmp://127.0.0.1:${server.rtmpPort}/live`,
    logs,
    receiver,
    hls: (playbackId, file = "index.m3u8") => `http://127.0.0.1:${server.port}/hls/${playbackId}/${file}`,
    stop: async (opts = {}) => {
      await server.stop();
      if (!opts.keepReceiver) await receiver.close();
    },
    dispose: async () => {
      fs.rmSync(dataDir, { recursive: true, force: true });
      await dropTestDatabase(dataDir);
    },
  };
}

/** The multistream events the receiver got for one target, in arrival order. */
export function targetEvents(receiver: Receiver, targetId: string): { event: string; payload: any; createdAt: number }[] {
  return receiver.received
    .filter((r) => typeof r.body?.event === "string" && r.body.event.startsWith("multistream.") && r.body.payload?.target?.id === targetId)
    .map((r) => ({ event: r.body.event, payload: r.body.payload, createdAt: r.body.createdAt }));
}

/** The newest media sequence number in a live playlist served over HTTP (-1: none yet). */
export async function newestSegment(url: string): Promise<number> {
  const res = await fetch(url);
  if (res.status !== 200) return -1;
  const segs = parseMediaPlaylist(await res.text()).segments;
  return segs.length ? segs[segs.length - 1]!.seq : -1;
}

/**
 * The pushes connected to a destination on 127.0.0.1:port, each as the local port of its TCP
 * connection (the same push keeps its connection; a restarted one has a new port). Read from
 * the kernel's table: onair's own RTMP client holds these connections, not a process whose
 * command line would name the destination.
 */
export function pushConnections(port: number): number[] {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  return fs
    .readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    // remote 127.0.0.1:port, state 01 (ESTABLISHED)
    .filter((f) => f[2] === `0100007F:${hex}` && f[3] === "01")
    .map((f) => parseInt(f[1]!.split(":")[1]!, 16));
}
