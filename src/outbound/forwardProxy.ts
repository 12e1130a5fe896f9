import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import type { Logger } from "../log";
import { normalizeHost, pinnedLookup, type DestinationCheck } from "./policy";

// A forward proxy on loopback that asks the outbound policy about every connection a client
// makes through it. ffmpeg pulling HLS is the client (`-http_proxy`): the source url's host is
// checked before ffmpeg starts, but ffmpeg then follows redirects and opens whatever the
// playlists list (variant playlists, segments, keys) on any host, resolving each name again.
// Through here, each of those is checked and connected to the address that was checked.

/** Where a client asked to go: `host` as written (brackets removed), `port` defaulted by scheme. */
export interface ProxyTarget {
  host: string;
  port: number;
}

/** The status line's words when the policy refuses; the pull reads them back from ffmpeg's `HTTP error 403 …`. */
export const REFUSED_PHRASE = "Refused by the outbound policy";

/** `host:port` of a CONNECT request (`cdn.example:443`, `[::1]:443`), or undefined (pure). */
export function parseAuthority(authority: string): ProxyTarget | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:/?#@[\]]+)):(\d{1,5})$/.exec(authority);
  if (!m) return undefined;
  const port = Number(m[3]);
  const host = m[1] ?? m[2]!;
  if (port < 1 || port > 65535 || (m[1] !== undefined && net.isIPv6(host) === false)) return undefined;
  return { host: normalizeHost(host), port };
}

/**
 * The target of an absolute-form request (`GET http://cdn.example/a.ts HTTP/1.1`), or undefined
 * for anything else: an origin-form path (nobody asked for a proxy), an https:// url (which
 * comes as CONNECT), user info (the client's credentials would travel in the url). Pure.
 */
export function parseAbsoluteTarget(requestTarget: string): (ProxyTarget & { path: string }) | undefined {
  if (!/^http:\/\//i.test(requestTarget)) return undefined;
  let url: URL;
  try {
    url = new URL(requestTarget);
  } catch {
    return undefined;
  }
  if (url.username || url.password || !url.hostname) return undefined;
  return { host: normalizeHost(url.hostname), port: url.port ? Number(url.port) : 80, path: url.pathname + url.search };
}

// Hop-by-hop headers (RFC 9110 7.6.1) are the proxy's own: not forwarded.
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade"]);

/** The request headers sent on: the client's, minus hop-by-hop ones and those `Connection` names (pure). */
export function forwardedHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(String(headers.connection ?? "").toLowerCase().split(",").map((s) => s.trim()));
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP_BY_HOP.has(k) && !named.has(k)));
}

export interface ForwardProxyOptions {
  /** The outbound policy's verdict on a host (OutboundPolicy.check). */
  check(host: string): Promise<DestinationCheck>;
  log: Logger;
  /** Client connections open at once (default 256, a few per pulled HLS stream); more are dropped. */
  maxConnections?: number;
  /** A connection (or tunnel) idle this long is closed, ms. */
  idleTimeoutMs?: number;
}

/** Counts, for the operator and tests. */
export interface ForwardProxyStats {
  /** Requests and tunnels the policy allowed. */
  allowed: number;
  /** Those it refused (or whose host did not resolve). */
  refused: number;
}

export class ForwardProxy {
  readonly stats: ForwardProxyStats = { allowed: 0, refused: 0 };
  private readonly server: http.Server;
  private readonly sockets = new Set<net.Socket>();
  private listening: Promise<string> | undefined;
  private closed = false;

  constructor(private readonly o: ForwardProxyOptions) {
    const idle = o.idleTimeoutMs ?? 30_000;
    this.server = http.createServer({ requestTimeout: idle, keepAliveTimeout: idle }, (req, res) => void this.forward(req, res));
    this.server.maxConnections = o.maxConnections ?? 256;
    this.server.timeout = idle;
    this.server.on("connection", (socket: net.Socket) => this.track(socket));
    this.server.on("connect", (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => void this.tunnel(req, socket, head));
    this.server.on("clientError", (_err, socket: net.Socket) => socket.destroy());
  }

  /** Starts listening on 127.0.0.1 (once) and answers the proxy's url: `http://127.0.0.1:<port>`. */
  url(): Promise<string> {
    this.listening ??= new Promise<string>((resolve, reject) => {
      if (this.closed) return reject(new Error("the forward proxy is closed"));
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(this.server.address() as AddressInfo).port}`));
    });
    return this.listening;
  }

  /** Stops listening and destroys every connection, clients' and upstream. */
  async close(): Promise<void> {
    this.closed = true;
    // A listen under way finishes first, so that the server it opens is closed too.
    await this.listening?.catch(() => undefined);
    for (const s of this.sockets) s.destroy();
    if (this.server.listening) await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(socket: net.Socket): void {
    if (this.closed) return void socket.destroy();
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
  }

  /** The policy's verdict on `target`, logged when it is no; undefined then. */
  private async allowed(target: ProxyTarget, kind: string): Promise<Extract<DestinationCheck, { outcome: "allowed" }> | undefined> {
    const check = await this.o.check(target.host);
    if (check.outcome === "allowed") {
      this.stats.allowed++;
      return check;
    }
    this.stats.refused++;
    // Host and port only: a path or query may hold the source's credentials.
    const why = check.outcome === "refused" ? { refused: check.detail } : { code: check.code };
    this.o.log.warn({ host: target.host, port: target.port, kind, ...why }, "forward proxy: connection refused by the outbound policy");
    return undefined;
  }

  /** An absolute-form request (http://): checked, sent on to the checked address, its answer piped back. */
  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const target = parseAbsoluteTarget(req.url ?? "");
    if (!target) return void res.writeHead(400, { connection: "close" }).end();
    const check = await this.allowed(target, "http");
    if (!check) return void res.writeHead(403, `${REFUSED_PHRASE}: ${target.host}`, { connection: "close" }).end();
    if (this.closed) return void res.destroy();
    const upstream = http.request({
      host: target.host,
      port: target.port,
      path: target.path,
      method: req.method,
      headers: forwardedHeaders(req.headers),
      // A fresh connection per request, to the addresses just checked (no rebinding).
      agent: false,
      lookup: pinnedLookup(check.addresses),
      timeout: this.o.idleTimeoutMs ?? 30_000,
    });
    upstream.on("socket", (s) => this.track(s));
    upstream.on("timeout", () => upstream.destroy());
    upstream.on("error", () => (res.headersSent ? res.destroy() : res.writeHead(502, { connection: "close" }).end()));
    upstream.on("response", (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, forwardedHeaders(answer.headers));
      answer.pipe(res);
      answer.on("error", () => res.destroy());
    });
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  }

  /** CONNECT host:port (https:// through the proxy): checked, then the bytes are piped both ways. */
  private async tunnel(req: http.IncomingMessage, client: net.Socket, head: Buffer): Promise<void> {
    client.on("error", () => client.destroy());
    const target = parseAuthority(req.url ?? "");
    if (!target) return void client.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    const check = await this.allowed(target, "connect");
    if (!check) return void client.end(`HTTP/1.1 403 ${REFUSED_PHRASE}: ${target.host}\r\nConnection: close\r\n\r\n`);
    if (this.closed || client.destroyed) return void client.destroy();
    const upstream = net.connect({ host: target.host, port: target.port, lookup: pinnedLookup(check.addresses) });
    this.track(upstream);
    const idle = this.o.idleTimeoutMs ?? 30_000;
    for (const s of [client, upstream]) s.setTimeout(idle, () => s.destroy());
    let established = false;
    upstream.once("connect", () => {
      established = true;
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    // Before the tunnel is up the client is told why; after, its end is the answer.
    upstream.on("error", () => (established ? client.destroy() : client.end("HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")));
    upstream.on("close", () => established && client.destroy());
    client.on("close", () => upstream.destroy());
  }
}
