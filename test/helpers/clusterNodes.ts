import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { waitFor } from "./media";

// The pieces of a cluster on loopback: a database of its own on the PostgreSQL server, s3rver
// for the bucket, onair processes (each in its own process group, so that a kill takes its
// ffmpeg children too, as a machine's death would), and a TCP balancer for RTMP.

const ROOT = path.resolve(__dirname, "../..");
export const REDIS_URL = process.env.TEST_REDIS_URL || "redis://127.0.0.1:6379";

/**
 * A node's settings in the cluster tests: the shared database, Redis prefix and bucket (s3rver),
 * short heartbeats and leases, 1 s segments, no reconnect window; `over` changes any of them.
 */
export function clusterEnv(shared: { roles: string; databaseUrl: string; redisPrefix: string; s3Port: number; bucket: string; leaseSeconds: number }, over: Record<string, string> = {}): Record<string, string> {
  return {
    ONAIR_ROLES: shared.roles,
    DATABASE_URL: shared.databaseUrl,
    REDIS_URL,
    REDIS_PREFIX: shared.redisPrefix,
    S3_ENDPOINT: `http://127.0.0.1:${shared.s3Port}`,
    S3_BUCKET: shared.bucket,
    S3_ACCESS_KEY_ID: "S3RVER",
    S3_SECRET_ACCESS_KEY: "S3RVER",
    NODE_HEARTBEAT_SECONDS: "1",
    NODE_LEASE_SECONDS: String(shared.leaseSeconds),
    HLS_SEGMENT_SECONDS: "1",
    RECONNECT_WINDOW_SECONDS: "0",
    WEBRTC_STUN_PORT: "0",
    DESTINATION_ALLOW_HOSTS: "127.0.0.1,localhost",
    ...over,
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
    env: { ...process.env, DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", RTMPS_PORT: "0", ADMIN_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", NODE_ID: name, ...env },
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
export async function rtmpBalancer(order: () => number[]): Promise<{ port: number; close(): Promise<void>; cut(): void }> {
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
    /** Drops every connection through it, as a network cut does; the balancer keeps listening. */
    cut: () => {
      for (const s of sockets) s.destroy();
    },
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

/** A process as /proc shows it. */
export interface ProcInfo {
  pid: number;
  ppid: number;
  /** R, S, D, T (stopped), Z, … */
  state: string;
  comm: string;
  args: string;
  cwd: string;
}

function readProc(pid: number): ProcInfo | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split at the last ")".
    const close = stat.lastIndexOf(")");
    const [state, ppid] = stat.slice(close + 2).split(" ");
    let cwd = "";
    try {
      cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      // not ours to read, or gone
    }
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
    return { pid, ppid: Number(ppid), state: state!, comm: stat.slice(stat.indexOf("(") + 1, close), args, cwd };
  } catch {
    return undefined;
  }
}

/** Every process on the machine (read from /proc: cheap enough to sample every 200 ms). */
export function processes(): ProcInfo[] {
  return fs
    .readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map((d) => readProc(Number(d)))
    .filter((p): p is ProcInfo => p !== undefined);
}

/** `pid` and all its descendants (onair's ffmpeg children run in process groups of their own, so -pid misses them). */
export function processTree(pid: number, all = processes()): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) for (const p of all) if (p.ppid === tree[i]) tree.push(p.pid);
  return tree;
}

/**
 * Pauses a node as a hypervisor pauses its VM: onair and every process under it stop at once
 * (stopping onair alone would leave its ffmpeg writing segments, which no real fault does).
 * Returns what to call to resume them.
 */
export function pauseNode(node: Node): { pids: number[]; resume(): void } {
  const pids = processTree(node.pid);
  for (const pid of pids) signal(pid, "SIGSTOP");
  let resumed = false;
  return {
    pids,
    resume: () => {
      if (resumed) return;
      resumed = true;
      for (const pid of pids) signal(pid, "SIGCONT");
    },
  };
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone meanwhile
  }
}
