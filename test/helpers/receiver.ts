import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request as a real receiver saw it. */
export interface Received {
  raw: string;
  body: any;
  headers: http.IncomingHttpHeaders;
  path: string;
  /** performance.now() at arrival: gaps between attempts. */
  at: number;
  /** What the receiver answered. */
  status: number;
}

/**
 * A status; a status with a body or headers, given `afterMs` later (a slow receiver); "hang":
 * never answer; "reset": drop the connection.
 */
export type Answer = number | { status: number; body?: string; headers?: Record<string, string>; afterMs?: number } | "hang" | "reset";

/** A real HTTP receiver whose answers the test scripts. */
export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Resolves once `done(received)` holds (checked on every request); fails after `timeoutMs`. */
  waitFor(done: (received: Received[]) => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(answer: (req: { body: any; raw: string; path: string; count: number }) => Answer = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  const waiters = new Set<() => void>();
  const hanging = new Set<http.ServerResponse>();
  const delayed = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const a = answer({ body, raw, path: req.url ?? "/", count: received.length + 1 });
      const status = a === "hang" || a === "reset" ? 0 : typeof a === "number" ? a : a.status;
      received.push({ raw, body, headers: req.headers, path: req.url ?? "/", at: performance.now(), status });
      if (a === "hang") hanging.add(res);
      else if (a === "reset") req.socket.destroy();
      else if (typeof a === "number") res.writeHead(a).end();
      else if (!a.afterMs) res.writeHead(a.status, a.headers).end(a.body);
      else {
        const timer = setTimeout(() => {
          delayed.delete(timer);
          // The client may have given up (its timeout, or it was stopped) meanwhile.
          if (!res.destroyed) res.writeHead(a.status, a.headers).end(a.body);
        }, a.afterMs);
        delayed.add(timer);
        hanging.add(res);
        res.once("close", () => hanging.delete(res));
      }
      for (const w of [...waiters]) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    waitFor: (done, what, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!done(received)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received ${received.length}: ${received.slice(-5).map((r) => `${r.body?.event}/${r.body?.id?.slice(0, 8)}→${r.status}`).join(", ")}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of delayed) clearTimeout(timer);
        for (const res of hanging) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
