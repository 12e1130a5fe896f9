import { dropTestDatabase, testDatabaseEnv } from "../helpers/database";
import { spawnSync } from "node:child_process";
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
  const config = loadConfig({ DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", HLS_SEGMENT_SECONDS: "1", RECONNECT_WINDOW_SECONDS: "0", ...LOOPBACK_DESTINATIONS, ...database, ...env });
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

/** PIDs of onair's push processes to the destination with this key (a listener has no -progress). */
export function pushPids(key: string): number[] {
  const ps = spawnSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  return ps.stdout
    .split("\n")
    .filter((l) => l.includes("ffmpeg") && l.includes(key) && l.includes("-progress"))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}
