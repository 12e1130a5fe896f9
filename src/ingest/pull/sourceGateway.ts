import crypto from "node:crypto";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { AddressInfo } from "node:net";
import type { Logger } from "../../log";
import { HOW_TO_ALLOW, normalizeHost, pinnedLookup, type DestinationCheck } from "../../outbound";
import { DEFAULT_MAX_URLS, gatewayBasename, UrlIds, type GatewayTarget } from "./gatewayUrls";
import { bodyKind, rewritePlaylist, type NamedUrl } from "./playlistRewrite";

// The source gateway: an http(s) pull's ffmpeg reads `http://127.0.0.1:<port>/<credential>/<id>/…`
// and nothing else (its protocol whitelist has no https, its format whitelist no concat or dash).
// The gateway fetches the real url itself: every host asked of the outbound policy and connected
// to at the address checked, redirects followed here (each checked), the source's user info and
// the pull's headers added, and every url an HLS playlist names replaced by a gateway url first.
// ffmpeg therefore never learns a url it could open by itself. See docs/architecture.md#pull-sources.

/** Something a pull's source led to that the gateway would not fetch or pass on. */
export interface GatewayRefusal {
  /** The host (or `a crypto: url`, say) it led to. */
  host: string;
  /** For the pull's status: what was refused, and what the operator can do. */
  problem: string;
  /** For the operator's log: which address or range, which format. */
  detail: string;
}

export interface GatewayPullOptions {
  /** The source url as stored (its user info becomes a Basic Authorization for its own origin). */
  source: string;
  /** The pull's headers, sent with every request. */
  headers: Record<string, string>;
  /** Called on every refusal (the pull logs it once per host and ends its ffmpeg). */
  onRefused(r: GatewayRefusal): void;
}

/** One pull's way in: the url ffmpeg opens; `close()` when its ffmpeg ended (the credential dies). */
export interface GatewayPull {
  url: string;
  /** Part of every url of this pull: masked in logs. */
  credential: string;
  close(): void;
}

export interface SourceGatewayOptions {
  check(host: string): Promise<DestinationCheck>;
  log: Logger;
  /** Redirects followed per request (each checked). */
  maxRedirects?: number;
  /** An upstream connection idle this long is closed, ms. */
  idleTimeoutMs?: number;
  /** ffmpeg's connections open at once, all pulls together; more are dropped. */
  maxConnections?: number;
  /** Upstream requests one pull may have under way at once; more get 503. */
  perPullRequests?: number;
  /** Urls remembered per pull. */
  maxUrls?: number;
}

/** Counts, for the operator and tests. */
export interface GatewayStats {
  /** Upstream requests the policy allowed (redirect hops each count). */
  allowed: number;
  /** Refused: by the policy, for their scheme, or for their format. */
  refused: number;
}

interface OpenPull {
  o: GatewayPullOptions;
  ids: UrlIds;
  source: URL;
  inFlight: Set<http.ClientRequest>;
}

/** Playlists larger than this are not rewritten (502). */
const MAX_PLAYLIST_BYTES = 4 << 20;
/** Response headers passed to ffmpeg; never Location (redirects are followed here) nor Content-Encoding (a compressed playlist would be read unrewritten). */
const PASSED_HEADERS = ["content-type", "content-length", "content-range", "accept-ranges", "last-modified"];
/** Request headers of ffmpeg's passed on. */
const ASKED_HEADERS = ["range", "user-agent", "accept"];

// "an httpproxy: url", "a crypto: url"
const article = (word: string) => (/^[aeiouh]/i.test(word) ? "an" : "a");

/** A url of another scheme than http(s), refused: `scheme` as `httpproxy:`. */
function schemeRefusal(scheme: string, detail: string): GatewayRefusal {
  const what = `${article(scheme)} ${scheme} url`;
  return { host: what, problem: `the source led to ${what}, refused by the outbound policy (only http and https urls are fetched)`, detail };
}

/** `headers` without their Authorization when `basic` has one (the header names are case-insensitive). */
/** Headers that carry a credential: sent to the source's own origin only. */
const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "proxy-authorization"]);

export class SourceGateway {
  readonly stats: GatewayStats = { allowed: 0, refused: 0 };
  private readonly server: http.Server;
  private readonly pulls = new Map<string, OpenPull>();
  private readonly sockets = new Set<net.Socket>();
  private listening: Promise<string> | undefined;
  private closed = false;

  constructor(private readonly o: SourceGatewayOptions) {
    this.server = http.createServer((req, res) => void this.serve(req, res).catch(() => res.destroy()));
    this.server.maxConnections = o.maxConnections ?? 256;
    this.server.on("connection", (socket: net.Socket) => {
      if (this.closed) return void socket.destroy();
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    this.server.on("clientError", (_err, socket: net.Socket) => socket.destroy());
  }

  /** A pull's entry: its source's gateway url, good until `close()`. */
  async open(o: GatewayPullOptions): Promise<GatewayPull> {
    const base = await this.base();
    const credential = crypto.randomBytes(24).toString("base64url");
    const pull: OpenPull = { o, ids: new UrlIds(this.o.maxUrls ?? DEFAULT_MAX_URLS), source: new URL(o.source), inFlight: new Set() };
    this.pulls.set(credential, pull);
    return {
      url: this.urlFor(base, credential, pull, { ok: true, url: o.source }),
      credential,
      close: () => {
        this.pulls.delete(credential);
        for (const r of pull.inFlight) r.destroy();
      },
    };
  }

  /** Stops listening; every connection, ffmpeg's and upstream, is destroyed. */
  async close(): Promise<void> {
    this.closed = true;
    await this.listening?.catch(() => undefined);
    for (const p of this.pulls.values()) for (const r of p.inFlight) r.destroy();
    this.pulls.clear();
    for (const s of this.sockets) s.destroy();
    if (this.server.listening) await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private base(): Promise<string> {
    this.listening ??= new Promise<string>((resolve, reject) => {
      if (this.closed) return reject(new Error("the source gateway is closed"));
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(this.server.address() as AddressInfo).port}`));
    });
    return this.listening;
  }

  /** The gateway url standing for `named` in this pull (the original basename at its end). */
  private urlFor(base: string, credential: string, pull: OpenPull, named: NamedUrl): string {
    const target: GatewayTarget = named.ok ? { url: named.url } : { refusedScheme: named.scheme };
    const id = pull.ids.idFor(target);
    // A refused one keeps its basename too: ffmpeg asks for it (and so the pull hears why) rather than skipping it for its extension.
    return `${base}/${credential}/${id}/${gatewayBasename(named.ok ? named.url : named.uri)}`;
  }

  private refuse(pull: OpenPull, res: http.ServerResponse, r: GatewayRefusal): void {
    this.stats.refused++;
    pull.o.onRefused(r);
    if (!res.headersSent) res.writeHead(403, { connection: "close" });
    res.end();
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const m = /^\/([A-Za-z0-9_-]{32})\/([0-9a-z]{1,12})\/[^/?]*$/.exec(req.url ?? "");
    const pull = m ? this.pulls.get(m[1]!) : undefined;
    // Without a live credential nothing is said about what exists.
    if (!m || !pull) return void res.writeHead(403, { connection: "close" }).end();
    if (req.method !== "GET") return void res.writeHead(405, { allow: "GET" }).end();
    const target = pull.ids.target(m[2]!);
    if (!target) return void res.writeHead(404).end();
    if (!("url" in target)) {
      return this.refuse(pull, res, schemeRefusal(target.refusedScheme, "a playlist named a url that is not http(s)"));
    }
    if (pull.inFlight.size >= (this.o.perPullRequests ?? 8)) return void res.writeHead(503, { "retry-after": "1" }).end();
    const asked: http.OutgoingHttpHeaders = {};
    for (const h of ASKED_HEADERS) if (req.headers[h] !== undefined) asked[h] = req.headers[h];
    await this.fetch(pull, target.url, asked, res, m[1]!);
  }

  /** Fetches `url` (following redirects, each checked) and answers ffmpeg with what came. */
  private async fetch(pull: OpenPull, first: string, asked: http.OutgoingHttpHeaders, res: http.ServerResponse, credential: string): Promise<void> {
    let url = new URL(first);
    for (let hop = 0; ; hop++) {
      const host = normalizeHost(url.hostname);
      const check = await this.o.check(host);
      if (res.destroyed || this.closed) return;
      // A name that does not resolve is the source's trouble, not a refusal: ffmpeg sees a 502.
      if (check.outcome === "unresolved") return void res.writeHead(502, { connection: "close" }).end();
      if (check.outcome === "refused") {
        return this.refuse(pull, res, { host, problem: `the source led to ${host}, refused by the outbound policy (${HOW_TO_ALLOW})`, detail: check.detail });
      }
      this.stats.allowed++;
      const answer = await this.request(pull, url, check, asked, res);
      if (!answer) return;
      const location = answer.headers.location;
      if (answer.statusCode !== undefined && answer.statusCode >= 300 && answer.statusCode < 400 && location) {
        answer.resume();
        let next: URL | undefined;
        try {
          next = new URL(location, url);
        } catch {
          next = undefined;
        }
        if (!next) return void res.writeHead(502).end();
        if (next.protocol !== "http:" && next.protocol !== "https:") {
          return this.refuse(pull, res, schemeRefusal(next.protocol, "a redirect to a url that is not http(s)"));
        }
        if (hop >= (this.o.maxRedirects ?? 5)) return void res.writeHead(502, { connection: "close" }).end();
        url = next;
        continue;
      }
      return this.deliver(pull, url, answer, res, credential);
    }
  }

  /** One upstream request to the checked addresses; undefined when it failed (ffmpeg was answered). */
  private request(pull: OpenPull, url: URL, check: Extract<DestinationCheck, { outcome: "allowed" }>, asked: http.OutgoingHttpHeaders, res: http.ServerResponse): Promise<http.IncomingMessage | undefined> {
    return new Promise((resolve) => {
      const secure = url.protocol === "https:";
      const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
      const options: https.RequestOptions = {
        host,
        port: url.port === "" ? (secure ? 443 : 80) : Number(url.port),
        path: url.pathname + url.search,
        method: "GET",
        // The url's user info speaks for its own origin (it names that origin's credentials); the
        // pull's headers go with every request, to whatever host a playlist names (a CDN may want
        // them), but its credentials (Authorization, Cookie) only to the source's own origin, as
        // curl and browsers do on a redirect: never to another host, nor over http from https.
        headers: { ...asked, ...this.pullHeaders(pull, url), ...this.authorization(pull, url) },
        // A fresh connection to the addresses just checked: no second DNS answer (rebinding).
        agent: false,
        lookup: pinnedLookup(check.addresses),
        ...(secure && net.isIP(host) === 0 ? { servername: host } : {}),
      };
      const upstream = (secure ? https : http).request(options);
      pull.inFlight.add(upstream);
      upstream.setTimeout(this.o.idleTimeoutMs ?? 30_000, () => upstream.destroy());
      upstream.on("close", () => pull.inFlight.delete(upstream));
      upstream.on("error", () => {
        if (!res.headersSent) res.writeHead(502, { connection: "close" }).end();
        else res.destroy();
        resolve(undefined);
      });
      upstream.on("response", resolve);
      res.on("close", () => upstream.destroy());
      upstream.end();
    });
  }

  /** Basic credentials: the url's own user info, else the source's for the source's origin. */
  private pullHeaders(pull: OpenPull, url: URL): Record<string, string> {
    const sameOrigin = url.origin === pull.source.origin;
    const basic = this.authorization(pull, url).authorization !== undefined;
    return Object.fromEntries(
      Object.entries(pull.o.headers).filter(([k]) => {
        const name = k.toLowerCase();
        if (name === "authorization") return sameOrigin && !basic;
        return sameOrigin || !CREDENTIAL_HEADERS.has(name);
      }),
    );
  }

  private authorization(pull: OpenPull, url: URL): Record<string, string> {
    const from = url.username ? url : url.origin === pull.source.origin && pull.source.username ? pull.source : undefined;
    if (!from) return {};
    const pair = `${decodeURIComponent(from.username)}:${decodeURIComponent(from.password)}`;
    return { authorization: `Basic ${Buffer.from(pair).toString("base64")}` };
  }

  /** A final answer: a playlist rewritten, a refused format refused, anything else streamed through. */
  private deliver(pull: OpenPull, url: URL, answer: http.IncomingMessage, res: http.ServerResponse, credential: string): void {
    const status = answer.statusCode ?? 502;
    if (status < 200 || status >= 300) {
      answer.resume();
      return void res.writeHead(status >= 300 && status < 400 ? 502 : status).end();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let mode: "sniffing" | "playlist" | "passing" = "sniffing";
    let skip = 0;
    const decide = (ended: boolean) => {
      const head = Buffer.concat(chunks);
      const kind = bodyKind(head, ended);
      if (kind.kind === "more") return;
      if (kind.kind === "refused") {
        answer.destroy();
        const host = normalizeHost(url.hostname);
        return this.refuse(pull, res, { host, problem: `the source answered ${kind.what} (from ${host}), which onair does not read: HLS, MPEG-TS, MP4, FLV, AAC, MP3 or Matroska only`, detail: kind.what });
      }
      if (kind.kind === "playlist") {
        mode = "playlist";
        skip = kind.skip;
        return;
      }
      mode = "passing";
      const headers = Object.fromEntries(PASSED_HEADERS.filter((h) => answer.headers[h] !== undefined).map((h) => [h, answer.headers[h]!]));
      res.writeHead(status, headers);
      res.write(head);
      if (ended) return void res.end();
      answer.pipe(res);
    };
    answer.on("data", (chunk: Buffer) => {
      if (mode === "passing") return;
      chunks.push(chunk);
      size += chunk.length;
      if (mode === "sniffing") decide(false);
      else if (size > MAX_PLAYLIST_BYTES + skip) {
        answer.destroy();
        res.writeHead(502, { connection: "close" }).end();
      }
    });
    answer.on("end", () => {
      if (mode === "sniffing") decide(true);
      if (mode === "playlist" && !res.headersSent) this.answerPlaylist(pull, url, Buffer.concat(chunks).subarray(skip), res, credential);
    });
    answer.on("error", () => res.destroy());
  }

  /** The playlist ffmpeg gets: every url in it a gateway url of this pull. */
  private answerPlaylist(pull: OpenPull, url: URL, body: Buffer, res: http.ServerResponse, credential: string): void {
    const base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    const text = rewritePlaylist(body.toString("utf8"), url.href, (named) => this.urlFor(base, credential, pull, named));
    res.writeHead(200, { "content-type": "application/vnd.apple.mpegurl", "content-length": Buffer.byteLength(text) }).end(text);
  }
}
