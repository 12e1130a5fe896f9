import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import net from "node:net";
import { classifyAddress } from "./addresses";
import type { AttemptFailure } from "./retry";

// One POST to a receiver: the only place that opens connections to webhook urls.

/** What is kept of a response body: enough to see a receiver's error message. */
export const RESPONSE_BODY_LIMIT = 4096;

export interface SendOptions {
  timeoutMs: number;
  blockPrivate: boolean;
}

export interface SendResult {
  statusCode?: number;
  statusText?: string;
  /** The start of the body, at most RESPONSE_BODY_LIMIT bytes (read no further). */
  responseBody?: string;
  failure?: AttemptFailure;
  /** Why, when `failure` is set. */
  error?: string;
  durationMs: number;
}

class RefusedAddress extends Error {
  readonly code = "EONAIR_REFUSED";
}

/**
 * DNS resolution that refuses non-public addresses, used as the socket's `lookup`: the address
 * checked is the one connected to, so a name that resolves differently a moment later (DNS
 * rebinding) cannot slip past. Any non-public address in the answer refuses the whole name.
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, "", 0);
    for (const a of addresses) {
      const kind = classifyAddress(a.address);
      if (kind) return callback(new RefusedAddress(`${hostname} resolves to ${a.address}, a ${kind} address (WEBHOOK_BLOCK_PRIVATE)`), "", 0);
    }
    // Node asks for every address when it races IPv4 and IPv6 (autoSelectFamily), one otherwise.
    if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 0);
    callback(null, first.address, first.family);
  });
};

/** Keep-alive connections per process: a receiver taking a burst of events is not reconnected each time. */
export class WebhookSender {
  private readonly agents = {
    "http:": new http.Agent({ keepAlive: true, maxSockets: 64 }),
    "https:": new https.Agent({ keepAlive: true, maxSockets: 64 }),
  };

  constructor(private readonly options: SendOptions) {}

  close(): void {
    this.agents["http:"].destroy();
    this.agents["https:"].destroy();
  }

  /** POSTs `body`; never throws: every outcome is a SendResult. */
  post(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.resolve({ failure: "refused", error: `not a URL: ${url}`, durationMs: 0 });
    }
    if (target.protocol !== "http:" && target.protocol !== "https:") {
      return Promise.resolve({ failure: "refused", error: `unsupported protocol ${target.protocol}`, durationMs: 0 });
    }
    if (this.options.blockPrivate) {
      // An IP literal is never looked up, so the lookup's check would not see it.
      const literal = target.hostname.replace(/^\[|\]$/g, "");
      const kind = net.isIP(literal) ? classifyAddress(literal) : null;
      if (kind) return Promise.resolve({ failure: "refused", error: `${literal} is a ${kind} address (WEBHOOK_BLOCK_PRIVATE)`, durationMs: 0 });
    }

    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const finish = (r: Omit<SendResult, "durationMs">) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...r, durationMs: elapsed() });
      };
      const transport = target.protocol === "https:" ? https : http;
      const req = transport.request(target, {
        method: "POST",
        agent: this.agents[target.protocol as "http:" | "https:"],
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
        ...(this.options.blockPrivate ? { lookup: publicOnlyLookup } : {}),
      });
      const timer = setTimeout(() => {
        finish({ failure: "timeout", error: `no response within ${this.options.timeoutMs} ms` });
        req.destroy();
      }, this.options.timeoutMs);

      req.on("error", (err: NodeJS.ErrnoException) => {
        if (err instanceof RefusedAddress) finish({ failure: "refused", error: err.message });
        else finish({ failure: "network", error: `${err.code ? err.code + ": " : ""}${err.message}` });
      });
      // http.request never follows redirects: a 3xx is reported as it is (redirect limit 0).
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () =>
          finish({
            statusCode: res.statusCode,
            statusText: res.statusMessage,
            responseBody: Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString("utf8"),
          });
        res.on("data", (chunk: Buffer) => {
          if (size >= RESPONSE_BODY_LIMIT) return;
          chunks.push(chunk);
          size += chunk.length;
          if (size >= RESPONSE_BODY_LIMIT) {
            // Enough: a receiver cannot make onair read (or hold) a large body.
            done();
            res.destroy();
          }
        });
        res.on("end", done);
        res.on("error", done);
        res.on("close", done);
      });
      req.end(body);
    });
  }
}
