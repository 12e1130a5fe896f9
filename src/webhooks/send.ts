import http from "node:http";
import https from "node:https";
import { pinnedLookup, type OutboundPolicy } from "../outbound";
import type { AttemptFailure } from "./retry";

// One POST to a receiver: the only place that opens connections to webhook urls.

/** What is kept of a response body: enough to see a receiver's error message. */
export const RESPONSE_BODY_LIMIT = 4096;

export interface SendOptions {
  timeoutMs: number;
  /** Asked before every attempt (DNS rebinding): the connection goes to the addresses it checked. */
  policy: OutboundPolicy;
}

export interface SendResult {
  statusCode?: number;
  statusText?: string;
  /** The start of the body, at most RESPONSE_BODY_LIMIT bytes (read no further). */
  responseBody?: string;
  failure?: AttemptFailure;
  /** Why, when `failure` is set: for the user (a policy refusal says no more than that). */
  error?: string;
  /** Which address the outbound policy refused and why: for the operator's log only. */
  refusedDetail?: string;
  durationMs: number;
}

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

    return new Promise<SendResult>((resolve) => {
      let settled = false;
      let req: http.ClientRequest | undefined;
      const finish = (r: Omit<SendResult, "durationMs">) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...r, durationMs: elapsed() });
      };
      // One bound for the whole attempt, the DNS lookup included.
      const timer = setTimeout(() => {
        finish({ failure: "timeout", error: `no response within ${this.options.timeoutMs} ms` });
        req?.destroy();
      }, this.options.timeoutMs);

      void this.options.policy.check(target.hostname).then((check) => {
        if (settled) return;
        // Refused before any connection is opened, in the same words whatever the address was
        // (a closed port, a timeout or a refusal would tell a private network's layout).
        if (check.outcome === "refused") return finish({ failure: "refused", error: check.reason, refusedDetail: check.detail });
        if (check.outcome === "unresolved") return finish({ failure: "network", error: check.reason });
        const transport = target.protocol === "https:" ? https : http;
        // An IP literal is connected to as it is; a name only to the addresses just checked
        // (TLS still verifies, and sends as SNI, the name itself).
        req = transport.request(target, {
          method: "POST",
          agent: this.agents[target.protocol as "http:" | "https:"],
          headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
          lookup: pinnedLookup(check.addresses),
        });
        req.on("error", (err: NodeJS.ErrnoException) => finish({ failure: "network", error: `${err.code ? err.code + ": " : ""}${err.message}` }));
        // http.request never follows redirects: a 3xx is reported as it is (redirect limit 0).
        req.on("response", (res) => readResponse(res, finish));
        req.end(body);
      });
    });
  }
}

/** The status and the start of the body, read up to RESPONSE_BODY_LIMIT bytes and no further. */
function readResponse(res: http.IncomingMessage, finish: (r: Omit<SendResult, "durationMs">) => void): void {
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
}
