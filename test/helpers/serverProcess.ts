import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { waitFor } from "./media";
import { LOOPBACK_DESTINATIONS } from "./server";

const ROOT = path.resolve(__dirname, "../..");

export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** performance.now() when the process was seen gone. */
  at: number;
}

/** `npm start` as an operator runs it: its own process, read through its banner. */
export interface ServerProcess {
  child: ChildProcess;
  pid: number;
  /** http://127.0.0.1:<port>/api */
  apiUrl: string;
  /** rtmp://127.0.0.1:<port>/live */
  rtmpUrl: string;
  /** The first user's key, printed only by the first start on an empty data directory. */
  key: string | undefined;
  exited: Promise<ServerExit>;
  /** What the server wrote on stderr (its log), for failure messages. */
  log(): string;
  /** SIGKILL unless it has exited; resolves once it has. Safe to call in any state. */
  kill(): Promise<ServerExit>;
}

/**
 * Spawns `node --import tsx src/main.ts` on `dataDir` with PORT=0 and RTMP_PORT=0 (the ports it
 * bound are read from its banner, so parallel test files never collide) and waits for the banner.
 */
export async function startServerProcess(dataDir: string, env: Record<string, string> = {}, startTimeoutMs = 30_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    // No reconnect window unless a test asks for one (see test/helpers/server.ts).
    env: { ...process.env, DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", RTMPS_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", RECONNECT_WINDOW_SECONDS: "0", WEBRTC_STUN_PORT: "0", ...LOOPBACK_DESTINATIONS, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
  // Bounded: a long run logs a lot, and only the end explains a failure.
  child.stderr!.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-200_000)));
  let gone: ServerExit | undefined;
  const exited = new Promise<ServerExit>((resolve) =>
    child.once("exit", (code, signal) => resolve((gone = { code, signal, at: performance.now() }))),
  );
  const kill = () => {
    if (!gone) child.kill("SIGKILL");
    return exited;
  };
  try {
    const banner = await waitFor(
      "the server's banner",
      () => {
        if (gone) throw new Error(`the server exited (${gone.code ?? gone.signal}) before its banner:\n${stderr.slice(-4000)}`);
        const api = /API:\s+(\S+)/.exec(stdout)?.[1];
        const rtmp = /RTMP ingest:\s+(\S+)\/<streamKey>/.exec(stdout)?.[1];
        return api && rtmp ? { api, rtmp } : undefined;
      },
      startTimeoutMs,
    );
    // The banner shows PUBLIC_URL's host (localhost); the server listens on 127.0.0.1 only.
    const loopback = (url: string) => url.replace("//localhost:", "//127.0.0.1:");
    return {
      child,
      pid: child.pid!,
      apiUrl: loopback(banner.api),
      rtmpUrl: loopback(banner.rtmp),
      key: /API key:\s+(\S+)/.exec(stdout)?.[1],
      exited,
      log: () => stderr,
      kill,
    };
  } catch (err) {
    await kill();
    throw err;
  }
}
