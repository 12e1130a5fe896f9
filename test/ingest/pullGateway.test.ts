import http from "node:http";
import type { AddressInfo } from "node:net";
import { SourceGateway, type GatewayRefusal } from "../../src/ingest";
import { createLogger } from "../../src/log";
import { OutboundPolicy } from "../../src/outbound";

// The source gateway on its own, with real sockets and the real outbound policy: what ffmpeg
// would ask of it, asked with Node's http client. 127.0.0.2 is allowed; 127.0.0.3 is not.

const policy = new OutboundPolicy({ allowPrivate: false, allowHosts: ["127.0.0.2"] });

interface Upstream {
  base: string;
  requests: { path: string; headers: http.IncomingHttpHeaders }[];
  close(): Promise<void>;
}

async function upstream(host: string, answer: (p: string, req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Upstream> {
  const requests: Upstream["requests"] = [];
  const server = http.createServer((req, res) => {
    requests.push({ path: req.url ?? "", headers: req.headers });
    answer(req.url ?? "", req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    base: `http://${host}:${(server.address() as AddressInfo).port}`,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function get(url: string, headers: http.OutgoingHttpHeaders = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString("latin1") }));
    }).on("error", reject);
  });
}

describe("the source gateway", () => {
  const gateway = new SourceGateway({ check: (h) => policy.check(h), log: createLogger("silent"), maxRedirects: 2 });
  let inside: Upstream;
  let origin: Upstream;
  const refusals: GatewayRefusal[] = [];
  const open = (source: string, headers: Record<string, string> = {}) => gateway.open({ source, headers, onRefused: (r) => refusals.push(r) });

  beforeAll(async () => {
    inside = await upstream("127.0.0.3", (_p, _req, res) => res.writeHead(200).end("secret"));
    origin = await upstream("127.0.0.2", (p, req, res) => {
      if (p.startsWith("/hop")) return res.writeHead(302, { location: `/hop${Number(p.slice(4)) + 1}` }).end();
      if (p === "/to-inside") return res.writeHead(301, { location: `${inside.base}/x.ts` }).end();
      if (p === "/to-file") return res.writeHead(302, { location: "file:///etc/passwd" }).end();
      if (p === "/live.m3u8") return res.writeHead(200).end(`#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nseg0.ts\n#EXTINF:1,\n${inside.base}/admin.ts\n#EXTINF:1,\nhttpproxy://127.0.0.3:1/a.ts\n`);
      if (p === "/gz") return res.writeHead(200, { "content-encoding": "gzip", "content-type": "application/octet-stream" }).end(Buffer.alloc(2000, 1));
      const body = Buffer.alloc(4000, 0x47);
      const range = /bytes=(\d+)-(\d+)/.exec(String(req.headers.range ?? ""));
      if (range) return res.writeHead(206, { "content-range": `bytes ${range[1]}-${range[2]}/4000` }).end(body.subarray(Number(range[1]), Number(range[2]) + 1));
      res.writeHead(200, { "content-type": "video/mp2t" }).end(body);
    });
  });
  afterAll(async () => {
    await gateway.close();
    await inside.close();
    await origin.close();
  });
  beforeEach(() => refusals.splice(0));

  it("answers 403 without a live credential, and the credential dies with its pull", async () => {
    const pull = await open(`${origin.base}/seg.ts`);
    const path = new URL(pull.url).pathname;
    expect(pull.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{32}\/1\/seg\.ts$/);
    expect((await get(pull.url)).status).toBe(200);
    const port = new URL(pull.url).port;
    expect((await get(`http://127.0.0.1:${port}/${"A".repeat(32)}/1/seg.ts`)).status).toBe(403);
    expect((await get(`http://127.0.0.1:${port}/`)).status).toBe(403);
    // A credential of another shape: nothing said either.
    expect((await get(`http://127.0.0.1:${port}${path.replace(/^\/[^/]+/, "/x")}`)).status).toBe(403);
    pull.close();
    expect((await get(pull.url)).status).toBe(403);
  });

  it("passes Range on and keeps the 206; never passes a Content-Encoding", async () => {
    const pull = await open(`${origin.base}/seg.ts`);
    const part = await get(pull.url, { range: "bytes=100-1099" });
    expect(part.status).toBe(206);
    expect(part.headers["content-range"]).toBe("bytes 100-1099/4000");
    expect(part.body.length).toBe(1000);
    const gz = await get((await open(`${origin.base}/gz`)).url);
    expect(gz.headers["content-encoding"]).toBeUndefined();
    pull.close();
  });

  it("rewrites a playlist: its urls become gateway urls, a refused host is refused when asked, a refused scheme too", async () => {
    const pull = await open(`${origin.base}/live.m3u8`);
    const list = await get(pull.url);
    expect(list.status).toBe(200);
    const urls = list.body.split("\n").filter((l) => l !== "" && !l.startsWith("#"));
    expect(urls).toHaveLength(3);
    for (const u of urls) expect(u.startsWith(new URL(pull.url).origin + "/" + pull.credential + "/")).toBe(true);
    expect(urls.map((u) => u.split("/").pop())).toEqual(["seg0.ts", "admin.ts", "a.ts"]);
    expect((await get(urls[0]!)).status).toBe(200);
    expect((await get(urls[1]!)).status).toBe(403);
    expect((await get(urls[2]!)).status).toBe(403);
    expect(refusals.map((r) => r.host)).toEqual(["127.0.0.3", "an httpproxy: url"]);
    expect(inside.requests).toEqual([]);
    pull.close();
  });

  it("follows redirects itself, each checked, at most maxRedirects; never to another scheme", async () => {
    const ok = await get((await open(`${origin.base}/hop0`)).url);
    expect(ok.status).toBe(502); // hop0 → hop1 → hop2 → hop3: more than 2
    expect(origin.requests.filter((r) => r.path.startsWith("/hop")).map((r) => r.path)).toEqual(["/hop0", "/hop1", "/hop2"]);
    expect((await get((await open(`${origin.base}/to-inside`)).url)).status).toBe(403);
    expect((await get((await open(`${origin.base}/to-file`)).url)).status).toBe(403);
    expect(refusals.map((r) => r.host)).toEqual(["127.0.0.3", "a file: url"]);
    expect(inside.requests).toEqual([]);
  });

  it("adds the source's user info for its own origin only, and the pull's headers everywhere", async () => {
    const u = new URL(`${origin.base}/live.m3u8`);
    const pull = await open(`http://us%40er:p%3Ass@${u.host}/live.m3u8`, { "X-Token": "t1" });
    const list = await get(pull.url);
    const seg = list.body.split("\n").find((l) => l.endsWith("seg0.ts"))!;
    await get(seg);
    const asked = origin.requests.filter((r) => r.path === "/live.m3u8" || r.path === "/seg0.ts").slice(-2);
    for (const r of asked) {
      expect(r.headers.authorization).toBe(`Basic ${Buffer.from("us@er:p:ss").toString("base64")}`);
      expect(r.headers["x-token"]).toBe("t1");
    }
    pull.close();
  });
});
