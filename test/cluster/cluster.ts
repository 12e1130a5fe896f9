import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import pg from "pg";
import { waitFor } from "../helpers/media";

// The pieces of a cluster on loopback: a database of its own on the PostgreSQL server, s3rver
// for the bucket, onair processes (each in its own process group, so that a kill takes its
// ffmpeg children too, as a machine's death would), and a TCP balancer for RTMP.

const ROOT = path.resolve(__dirname, "../..");
export const PG_SERVER = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
export const REDIS_URL = process.env.TEST_REDIS_URL || "redis://127.0.0.1:6379";

export function urlWithDatabase(base: string, database: string): string {
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

/** A throw-away database; `drop()` removes it (and cuts whatever is still connected). */
export async function throwAwayDatabase(name: string): Promise<{ url: string; query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<R[]>; drop(): Promise<void> }> {
  const admin = new pg.Client({ connectionString: PG_SERVER });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = urlWithDatabase(PG_SERVER, name);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  return {
    url,
    query: async (sql, params) => (await pool.query(sql, params)).rows,
    drop: async () => {
      await pool.end();
      const c = new pg.Client({ connectionString: PG_SERVER });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}

export interface Node {
  name: string;
  child: ChildProcess;
  pid: number;
  apiUrl: string;
  base: string;
  /** The operator's listener (/metrics, /readyz). */
  adminUrl: string;
  rtmpPort: number;
  key: string | undefined;
  log(): string;
  /** SIGKILL to the whole process group (onair and its ffmpeg children). */
  killGroup(): void;
  /** SIGTERM, as a supervisor stops it; SIGKILL to the group if it has not exited within `ms`. */
  stop(ms?: number): Promise<void>;
  exited: Promise<void>;
}

/** One onair process, read through its banner. */
export async function startNode(name: string, dataDir: string, env: Record<string, string>): Promise<Node> {
  fs.mkdirSync(dataDir, { recursive: true });
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", ADMIN_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", NODE_ID: name, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-300_000)));
  let gone = false;
  const exited = new Promise<void>((resolve) => child.once("exit", () => ((gone = true), resolve())));
  const killGroup = () => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // gone already
    }
  };
  try {
    const banner = await waitFor(`${name}'s banner`, () => {
      if (gone) throw new Error(`${name} exited before its banner:\n${stderr.slice(-4000)}`);
      const api = /API:\s+(\S+)/.exec(stdout)?.[1];
      const rtmp = /RTMP ingest:\s+rtmp:\/\/[^:]+:(\d+)\//.exec(stdout)?.[1];
      const admin = /operator:\s+(http:\/\/\S+)\/metrics/.exec(stdout)?.[1];
      return api && rtmp && admin ? { api: api.replace("//localhost:", "//127.0.0.1:"), rtmp: Number(rtmp), admin } : undefined;
    }, 60_000);
    return {
      name,
      child,
      pid: child.pid!,
      apiUrl: banner.api,
      base: banner.api.replace(/\/api$/, ""),
      adminUrl: banner.admin,
      rtmpPort: banner.rtmp,
      key: /API key:\s+(\S+)/.exec(stdout)?.[1],
      log: () => stderr,
      killGroup,
      stop: async (ms = 10_000) => {
        if (gone) return;
        child.kill("SIGTERM");
        const timer = setTimeout(killGroup, ms);
        await exited;
        clearTimeout(timer);
      },
      exited,
    };
  } catch (err) {
    killGroup();
    throw err;
  }
}

/**
 * The L4 load balancer in front of the ingest nodes: each connection goes to the first node of
 * `order()` that accepts it (a dead node refuses, as a health-checked balancer would skip it).
 */
export async function rtmpBalancer(order: () => number[]): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.pause();
    const tryPort = (ports: number[]) => {
      const [port, ...rest] = ports;
      if (port === undefined) return void client.destroy();
      const upstream = net.connect(port, "127.0.0.1");
      upstream.once("connect", () => {
        sockets.add(upstream);
        upstream.on("close", () => (sockets.delete(upstream), client.destroy()));
        client.on("close", () => upstream.destroy());
        upstream.on("error", () => client.destroy());
        client.on("error", () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
      upstream.once("error", () => tryPort(rest));
    };
    tryPort(order());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * An encoder that reconnects as OBS does: when its connection ends, it waits `retryMs` and
 * publishes again, until stopped.
 */
export function reconnectingPublisher(url: string, retryMs = 1000): { connects: number[]; stop(): Promise<void>; current(): ChildProcess | undefined } {
  let stopped = false;
  let child: ChildProcess | undefined;
  const connects: number[] = [];
  let timer: NodeJS.Timeout | undefined;
  const run = () => {
    if (stopped) return;
    connects.push(Date.now());
    child = spawn(process.env.FFMPEG_PATH || "ffmpeg", [
      "-hide_banner", "-nostdin", "-loglevel", "error", "-re",
      "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=15",
      "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
      "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "15", "-keyint_min", "15", "-pix_fmt", "yuv420p", "-b:v", "300k",
      "-c:a", "aac", "-b:a", "64k", "-ar", "48000", "-f", "flv", url,
    ], { stdio: "ignore" });
    child.once("exit", () => {
      child = undefined;
      if (!stopped) timer = setTimeout(run, retryMs);
    });
  };
  run();
  return {
    connects,
    current: () => child,
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      const c = child;
      if (c && c.exitCode === null) {
        const done = new Promise((r) => c.once("exit", r));
        c.kill("SIGKILL");
        await done;
      }
    },
  };
}

/** fetch with a key; JSON in and out. */
export function client(apiUrl: string, key: string) {
  return async (method: string, p: string, body?: unknown) => {
    const res = await fetch(apiUrl + p, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, body: json, text };
  };
}
