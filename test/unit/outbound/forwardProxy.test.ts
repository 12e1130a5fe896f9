import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { createLogger } from "../../../src/log";
import { forwardedHeaders, ForwardProxy, OutboundPolicy, parseAbsoluteTarget, parseAuthority, type Lookup } from "../../../src/outbound";
import { waitFor } from "../../helpers/media";

// The forward proxy an http(s) pull's ffmpeg goes through: its request-target parsing (pure),
// then the proxy itself over real loopback sockets, with a policy that allows 127.0.0.1 and
// refuses 127.0.0.2 (both loopback, so nothing leaves the machine).

describe("forward proxy request targets", () => {
  it.each([
    ["cdn.example:443", { host: "cdn.example", port: 443 }],
    ["CDN.Example.:8443", { host: "cdn.example", port: 8443 }],
    ["[::1]:443", { host: "::1", port: 443 }],
    ["127.0.0.1:1", { host: "127.0.0.1", port: 1 }],
  ])("CONNECT %s", (authority, target) => {
    expect(parseAuthority(authority)).toEqual(target);
  });

  it.each(["cdn.example", "cdn.example:0", "cdn.example:65536", "::1:443", "[nothost]:443", "user@cdn.example:443", "cdn.example:443/x", "", "http://cdn.example:80"])(
    "refuses CONNECT %j",
    (authority) => {
      expect(parseAuthority(authority)).toBeUndefined();
    },
  );

  it.each([
    ["http://cdn.example/live/a.ts?token=x", { host: "cdn.example", port: 80, path: "/live/a.ts?token=x" }],
    ["HTTP://127.0.0.1:8080/x.m3u8", { host: "127.0.0.1", port: 8080, path: "/x.m3u8" }],
    ["http://[::1]:81/", { host: "::1", port: 81, path: "/" }],
  ])("absolute-form %s", (target, expected) => {
    expect(parseAbsoluteTarget(target)).toEqual(expected);
  });

  it.each(["/live/a.ts", "https://cdn.example/a.ts", "httpproxy://10.0.0.1:80/x", "http://user:pw@cdn.example/a", "http://", "ftp://cdn.example/a"])(
    "refuses the request target %j",
    (target) => {
      expect(parseAbsoluteTarget(target)).toBeUndefined();
    },
  );

  it("forwards the client's headers without the hop-by-hop ones", () => {
    const headers = { host: "cdn.example", authorization: "Bearer x", "proxy-authorization": "Basic y", "proxy-connection": "keep-alive", connection: "keep-alive, x-hop", "x-hop": "1", "x-cam": "lobby" };
    expect(forwardedHeaders(headers)).toEqual({ host: "cdn.example", authorization: "Bearer x", "x-cam": "lobby" });
  });
});

interface Origin {
  port: number;
  requests: string[];
  close(): Promise<void>;
}

async function origin(host: string): Promise<Origin> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers["x-cam"] ?? ""}`);
    if (req.url === "/away") return res.writeHead(302, { location: "http://127.0.0.2/" }).end();
    res.writeHead(200, { "content-type": "text/plain" }).end(`hello from ${host}`);
  });
  // A CONNECT to an origin would be a tunnel through a tunnel: none should arrive.
  server.on("connect", (req: http.IncomingMessage, socket: net.Socket) => {
    requests.push(`CONNECT ${req.url}`);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** One raw exchange with the proxy: what it answered until it closed (or `until` matched). */
function raw(proxyPort: number, text: string, until?: RegExp): Promise<{ answer: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(proxyPort, "127.0.0.1", () => socket.write(text));
    let answer = "";
    socket.on("data", (d: Buffer) => {
      answer += d.toString("latin1");
      if (until?.test(answer)) resolve({ answer, socket });
    });
    socket.on("close", () => resolve({ answer, socket }));
    socket.on("error", reject);
  });
}

describe("forward proxy", () => {
  let allowed: Origin;
  let refused: Origin;
  let proxy: ForwardProxy;
  let port: number;
  const warnings: string[] = [];
  // cam.example exists only in this resolver: a connection to it proves the checked address was used.
  const lookup: Lookup = async (host) => {
    if (host === "cam.example") return [{ address: "127.0.0.1", family: 4 }];
    if (host === "inside.example") return [{ address: "127.0.0.2", family: 4 }];
    throw Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" });
  };
  const policy = new OutboundPolicy({ allowPrivate: false, allowHosts: ["127.0.0.1"] }, lookup);

  beforeAll(async () => {
    allowed = await origin("127.0.0.1");
    refused = await origin("127.0.0.2");
    // The operator's log, as written.
    const log = createLogger("warn", { write: (line: string) => void warnings.push(line) });
    proxy = new ForwardProxy({ check: (host) => policy.check(host), log, maxConnections: 4, idleTimeoutMs: 5_000 });
    port = Number(new URL(await proxy.url()).port);
  });
  afterAll(async () => {
    await proxy.close();
    await allowed.close();
    await refused.close();
  });

  it("forwards an allowed absolute-form request to the checked address, headers and all", async () => {
    const { answer } = await raw(port, `GET http://cam.example:${allowed.port}/live.m3u8?token=abc HTTP/1.1\r\nHost: cam.example:${allowed.port}\r\nX-Cam: lobby\r\nConnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain("hello from 127.0.0.1");
    expect(allowed.requests).toContain("GET /live.m3u8?token=abc lobby");
  });

  it("answers 403 for a host the policy refuses, opens no connection there, and logs the host without the path", async () => {
    const before = proxy.stats.refused;
    for (const host of [`127.0.0.2:${refused.port}`, `inside.example:${refused.port}`]) {
      const { answer } = await raw(port, `GET http://${host}/secret/seg.ts?token=abc HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 403 Refused by the outbound policy: ${host.split(":")[0]}\\r\\n`));
    }
    const { answer } = await raw(port, `CONNECT 127.0.0.2:${refused.port} HTTP/1.1\r\nHost: 127.0.0.2:${refused.port}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 403 Refused by the outbound policy: 127\.0\.0\.2\r\n/);
    expect(refused.requests).toEqual([]);
    expect(proxy.stats.refused).toBe(before + 3);
    expect(warnings.join("\n")).toContain('"refused":"inside.example resolves to 127.0.0.2, a loopback address"');
    expect(warnings.join("\n")).not.toMatch(/secret|token/);
  });

  it("passes a redirect back to the client, which asks again (and is checked again)", async () => {
    const { answer } = await raw(port, `GET http://127.0.0.1:${allowed.port}/away HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 302 /);
    expect(answer).toMatch(/location: http:\/\/127\.0\.0\.2\//i);
  });

  it("refuses what is not a proxy request: an origin-form path, an https:// or httpproxy: url", async () => {
    for (const target of ["/live.m3u8", `https://127.0.0.1:${allowed.port}/`, `httpproxy://127.0.0.1:${allowed.port}/`]) {
      const { answer } = await raw(port, `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    }
  });

  it("tunnels an allowed CONNECT, and close() ends the tunnels still open", async () => {
    const own = new ForwardProxy({ check: (host) => policy.check(host), log: createLogger("silent") });
    const ownPort = Number(new URL(await own.url()).port);
    const { answer, socket } = await raw(ownPort, `CONNECT cam.example:${allowed.port} HTTP/1.1\r\nHost: cam.example:${allowed.port}\r\n\r\n`, /\r\n\r\n/);
    expect(answer).toBe("HTTP/1.1 200 Connection Established\r\n\r\n");
    let through = "";
    socket.on("data", (d: Buffer) => (through += d.toString()));
    socket.write(`GET /in-tunnel HTTP/1.1\r\nHost: x\r\n\r\n`);
    await waitFor("the answer through the tunnel", () => through.includes("hello from 127.0.0.1"), 5_000);
    expect(allowed.requests).toContain("GET /in-tunnel ");
    const closed = new Promise((resolve) => socket.once("close", resolve));
    await own.close();
    await closed;
    await expect(raw(ownPort, "GET / HTTP/1.1\r\n\r\n")).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });

  it("drops connections beyond its cap", async () => {
    const own = new ForwardProxy({ check: (host) => policy.check(host), log: createLogger("silent"), maxConnections: 1 });
    const ownPort = Number(new URL(await own.url()).port);
    try {
      const first = await raw(ownPort, `CONNECT 127.0.0.1:${allowed.port} HTTP/1.1\r\n\r\n`, /\r\n\r\n/);
      expect(first.answer).toMatch(/^HTTP\/1\.1 200 /);
      const second = await raw(ownPort, `CONNECT 127.0.0.1:${allowed.port} HTTP/1.1\r\n\r\n`);
      expect(second.answer).toBe("");
      first.socket.destroy();
    } finally {
      await own.close();
    }
  });
});
