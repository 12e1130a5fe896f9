import http from "node:http";
import http2 from "node:http2";
import type net from "node:net";
import type tls from "node:tls";
import type { Express } from "express";

// The public port: plain HTTP/1.1 by default; HTTP/2 over TLS (HTTP/1.1 still accepted) when
// the operator gives a certificate. Safari plays LL-HLS only over HTTP/2, and one connection
// carrying a player's playlist, part and segment requests at once is what keeps its parts
// coming on time.

export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

export interface PublicServer {
  readonly server: net.Server;
  readonly protocol: "http" | "https";
  /** Stops listening, lets requests finish, cuts what still runs after `graceMs`. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Express runs on Node's HTTP/2 compatibility objects once its request and response methods
 * sit on their prototypes instead of HTTP/1's: a twin of `app` (same routes, same settings)
 * whose `request`/`response` are built the way Express builds its own.
 */
export function http2Handler(app: Express): (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void {
  const requestMethods = Object.getOwnPropertyDescriptors(Object.getPrototypeOf(app.request));
  const responseMethods = Object.getOwnPropertyDescriptors(Object.getPrototypeOf(app.response));
  const own = { app: { configurable: true, enumerable: true, writable: true, value: app } };
  const twin = Object.create(app) as Express;
  twin.request = Object.create(Object.create(http2.Http2ServerRequest.prototype, requestMethods), own);
  twin.response = Object.create(Object.create(http2.Http2ServerResponse.prototype, responseMethods), own);
  return (req, res) => {
    // HTTP/2 has no Transfer-Encoding and need not send Content-Length: a request body is
    // signalled by the stream staying open after its headers. Body parsers look for one of the
    // two headers, so a body of unsaid length is announced the HTTP/1.1 way.
    if (!req.stream.endAfterHeaders && req.headers["content-length"] === undefined) req.headers["transfer-encoding"] = "chunked";
    // What HTTP/1.1 calls Host (links the API builds from it, e.g. pagination).
    if (req.headers.host === undefined && req.headers[":authority"] !== undefined) req.headers.host = req.headers[":authority"];
    (twin as unknown as { handle(req: unknown, res: unknown): void }).handle(req, res);
  };
}

const IDLE_SESSION_MS = 120_000;

/**
 * Requests one HTTP/2 connection may run at once: a player needs a few per rendition (a blocking
 * reload, a hinted part, a segment); Node's default is unbounded, and every one may be held open.
 */
export const MAX_CONCURRENT_STREAMS = 128;

export interface PublicServerOptions {
  /**
   * Open connections accepted (PUBLIC_MAX_CONNECTIONS; 0 or none: no cap). Node closes a
   * connection past it as it arrives, before a byte is read: no answer can be given, the client
   * sees a reset. An idle keep-alive connection counts until it closes (65 s idle), so the cap
   * is on sockets, not on requests: players keep one to six (HTTP/1.1) or one (HTTP/2).
   */
  maxConnections?: number;
}

/** Stops listening, closes idle connections now and cuts requests still running after `graceMs`: shutdown never hangs on a slow client. */
export function closeGracefully(server: http.Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), graceMs).unref();
  });
}

export function createPublicServer(app: Express, files?: TlsFiles, options: PublicServerOptions = {}): PublicServer {
  const sockets = new Set<net.Socket>();
  const cap = (server: net.Server) => {
    if (options.maxConnections) server.maxConnections = options.maxConnections;
  };
  if (!files) {
    const server = http.createServer(app);
    cap(server);
    // Requests Node's parser refuses before Express sees them (headers or URL over 16 KiB, bad
    // syntax) still get the API's error body rather than a bare status line.
    server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) return socket.destroy();
      const status = err.code === "HPE_HEADER_OVERFLOW" ? 431 : 400;
      const body = JSON.stringify({ errors: [status === 431 ? "request headers or URL too large (16 KiB at most)" : "malformed HTTP request"] });
      socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    });
    server.keepAliveTimeout = 65_000;
    return { server, protocol: "http", close: (graceMs = 3000) => closeGracefully(server, graceMs) };
  }
  const h2 = http2Handler(app);
  // HTTP/1.1 requests running per connection: an idle one is closed at once on shutdown.
  const running = new Map<net.Socket, number>();
  const server = http2.createSecureServer({ cert: files.cert, key: files.key, allowHTTP1: true, settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } }, (req, res) => {
    if (req.httpVersionMajor >= 2) return h2(req, res);
    const socket = req.socket as net.Socket;
    running.set(socket, (running.get(socket) ?? 0) + 1);
    // An aborted request closes its socket first: a closed socket is not counted back in.
    res.once("close", () => {
      if (running.has(socket) && !socket.destroyed) running.set(socket, running.get(socket)! - 1);
    });
    app(req as unknown as http.IncomingMessage, res as unknown as http.ServerResponse);
  });
  cap(server);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("secureConnection", (socket: tls.TLSSocket) => {
    sockets.add(socket);
    if (socket.alpnProtocol !== "h2") running.set(socket, 0);
    socket.once("close", () => {
      sockets.delete(socket);
      running.delete(socket);
    });
  });
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    // An idle HTTP/2 connection is closed after two minutes (players keep theirs busy).
    session.setTimeout(IDLE_SESSION_MS, () => session.close());
  });
  // HTTP/1.1 keep-alive over TLS, as on the plain port.
  (server as unknown as { keepAliveTimeout: number }).keepAliveTimeout = 65_000;
  server.setTimeout(IDLE_SESSION_MS);
  return {
    server,
    protocol: "https",
    close: (graceMs = 3000) =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // GOAWAY: clients finish what they asked and open nothing new here.
        for (const s of sessions) s.close();
        for (const socket of sockets) if (running.get(socket) === 0) socket.destroy();
        setTimeout(() => {
          for (const socket of sockets) socket.destroy();
        }, graceMs).unref();
      }),
  };
}
