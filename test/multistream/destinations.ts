import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import tls from "node:tls";
import { FFMPEG, waitFor } from "../helpers/media";

// Real multistream destinations: a listening ffmpeg takes one publisher (RTMP, or SRT in
// listener mode) and writes what it receives to a file the test then probes. RTMPS is that
// RTMP listener behind a TLS terminator of our own (ffmpeg cannot listen for rtmps).

export interface Destination {
  /** The url to give a target: carries a secret-looking stream key. */
  url: string;
  /** That key, which must never show up in events or logs. */
  key: string;
  port: number;
  /** What the destination received. */
  file: string;
  /** The listening ffmpeg; it exits once its publisher leaves. */
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  /** Bytes received so far. */
  received(): number;
  /** Kills the listener if it is still running (SIGKILL: a crashed destination). */
  kill(): void;
  close(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether something listens on 127.0.0.1:port: read from the kernel, so no connection is made
 * (a listening ffmpeg takes exactly one connection, and a probe would be it). */
function bound(port: number, proto: "tcp" | "udp"): boolean {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  const table = fs.readFileSync(`/proc/net/${proto}`, "utf8").split("\n").slice(1);
  // tcp: state 0A is LISTEN; udp: a socket bound to the port (state 07).
  return table.some((l) => {
    const f = l.trim().split(/\s+/);
    return f[1]?.endsWith(`:${hex}`) && (proto === "udp" || f[3] === "0A");
  });
}

function spawnListener(args: string[]): { child: ChildProcess; exited: Destination["exited"] } {
  const child = spawn(FFMPEG, ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "warning", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.once("close", (code, signal) => resolve({ code, signal, stderr })),
  );
  return { child, exited };
}

const newKey = () => `sk_live_${crypto.randomBytes(8).toString("hex")}`;
const fileSize = (file: string) => {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
};

function destination(
  fields: Pick<Destination, "url" | "key" | "port" | "file">,
  child: ChildProcess,
  exited: Destination["exited"],
  extraClose?: () => Promise<void>,
): Destination {
  let running = true;
  void exited.then(() => (running = false));
  // Only the listener we started, by its PID.
  const kill = () => {
    if (running) child.kill("SIGKILL");
  };
  return {
    ...fields,
    pid: child.pid!,
    exited,
    received: () => fileSize(fields.file),
    kill,
    close: async () => {
      kill();
      await exited;
      await extraClose?.();
    },
  };
}

/** `ffmpeg -listen 1 -i rtmp://127.0.0.1:<port>/…` copying to `<dir>/<name>.flv`. */
export async function startRtmpDestination(dir: string, name: string, port?: number): Promise<Destination> {
  port ??= await freePort();
  const key = newKey();
  const file = path.join(dir, `${name}.flv`);
  // A listening ffmpeg takes any app and key; the one in the url stands for a real service's.
  // -flush_packets 1: the file grows as media arrives, so a test sees it being received.
  const { child, exited } = spawnListener(["-listen", "1", "-i", `rtmp://127.0.0.1:${port}/app/${key}`, "-c", "copy", "-flush_packets", "1", "-y", file]);
  await waitFor(`an RTMP listener on port ${port}`, () => bound(port, "tcp"), 10_000, 20);
  return destination({ url: `rtmp://127.0.0.1:${port}/app/${key}`, key, port, file }, child, exited);
}

/** An SRT listener copying to `<dir>/<name>.ts`; the target's streamid carries the key. */
export async function startSrtDestination(dir: string, name: string): Promise<Destination> {
  const port = await freePort();
  const key = newKey();
  const file = path.join(dir, `${name}.ts`);
  const { child, exited } = spawnListener(["-i", `srt://127.0.0.1:${port}?mode=listener`, "-c", "copy", "-y", file]);
  await waitFor(`an SRT listener on port ${port}`, () => bound(port, "udp"), 10_000, 20);
  return destination({ url: `srt://127.0.0.1:${port}?streamid=${key}`, key, port, file }, child, exited);
}

/** RTMPS: TLS (a self-signed test certificate) terminated here, RTMP on to a listening ffmpeg. */
export async function startRtmpsDestination(dir: string, name: string): Promise<Destination> {
  const inner = await startRtmpDestination(dir, name);
  const fixtures = path.join(__dirname, "fixtures");
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({ key: fs.readFileSync(path.join(fixtures, "tls-key.pem")), cert: fs.readFileSync(path.join(fixtures, "tls-cert.pem")) }, (secure) => {
    const plain = net.connect(inner.port, "127.0.0.1");
    sockets.add(secure).add(plain);
    secure.pipe(plain).pipe(secure);
    const end = () => {
      secure.destroy();
      plain.destroy();
    };
    secure.on("error", end).on("close", end);
    plain.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    ...inner,
    url: `rtmps://127.0.0.1:${port}/app/${inner.key}`,
    port,
    close: async () => {
      await inner.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
