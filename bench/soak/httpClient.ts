// HTTP: two keep-alive agents, so that readers and the API load do not queue behind each other.

import http from "node:http";
import { now } from "./runState";

const REQUEST_TIMEOUT_MS = 10_000;

export const apiAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
export const hlsAgent = new http.Agent({ keepAlive: true });

export interface HttpResult {
  status: number;
  body: Buffer;
  ms: number;
}

export function request(agent: http.Agent, url: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<HttpResult> {
  const started = now();
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent, method: opts.method ?? "GET", headers: opts.headers, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), ms: now() - started }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end(opts.body);
  });
}
