import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import { Redis } from "ioredis";

/**
 * A redis-server of the test's own, on a free loopback port, keeping nothing on disk: for tests
 * that flush or stop Redis, which must never touch the shared one other test files use.
 */
export interface OwnRedis {
  url: string;
  port: number;
  /** FLUSHALL: what a restart without persistence does to the jobs. */
  flush(): Promise<void>;
  /** SIGKILL; resolves once it is gone. */
  stop(): Promise<void>;
  /** Starts it again on the same port (after stop). */
  restart(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

async function answersPing(url: string): Promise<boolean> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  r.on("error", () => undefined);
  try {
    await r.connect();
    return (await r.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

export async function startOwnRedis(extraArgs: string[] = []): Promise<OwnRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", ...extraArgs], { stdio: "ignore" });
    const deadline = Date.now() + 10_000;
    while (!(await answersPing(url))) {
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer within 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  await launch();
  const stop = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((r) => c.once("exit", r));
    c.kill("SIGKILL");
    await gone;
  };
  return {
    url,
    port,
    flush: async () => {
      const r = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        await r.flushall();
      } finally {
        r.disconnect();
      }
    },
    stop,
    restart: launch,
  };
}
