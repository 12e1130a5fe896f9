import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import path from "node:path";
import * as HLS from "hls-parser";
import { pushTestStream, waitFor } from "../helpers/media";
import { startTestServer, tempDir, type TestServer } from "../helpers/server";

// TLS_CERT/TLS_KEY: the public port speaks HTTP/2 (what Safari needs for LL-HLS) and still
// HTTP/1.1, the whole surface on both: API, pages, live HLS from memory, files from disk.

let t: TestServer;
let ca: Buffer;
let client: http2.ClientHttp2Session;

beforeAll(async () => {
  const dir = tempDir("onair-tls-");
  const cert = path.join(dir, "cert.pem");
  const key = path.join(dir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert], { stdio: "ignore" });
  ca = fs.readFileSync(cert);
  t = await startTestServer({ TLS_CERT: cert, TLS_KEY: key });
  client = http2.connect(`https://127.0.0.1:${t.server.port}`, { ca });
});
afterAll(async () => {
  client?.close();
  await t.stop();
});

/** One request over the shared HTTP/2 connection. */
function h2get(pathname: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = client.request({ ":path": pathname, ...headers });
    const chunks: Buffer[] = [];
    let responseHeaders: http2.IncomingHttpHeaders = {};
    req.on("response", (h) => (responseHeaders = h));
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve({ status: Number(responseHeaders[":status"]), headers: responseHeaders, body: Buffer.concat(chunks) }));
    req.on("error", reject);
    req.end();
  });
}

function h1get(pathname: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; version: string }> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: "127.0.0.1", port: t.server.port, path: pathname, ca, headers, servername: "localhost" }, (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode!, body, version: res.httpVersion }));
      })
      .on("error", reject);
  });
}

const auth = () => ({ authorization: `Bearer ${t.key}` });

/** Creates a one-rendition stream through the API over HTTP/2. */
function createOverH2(name: string): Promise<{ id: string; streamKey: string; playbackId: string }> {
  return new Promise((resolve, reject) => {
    const req = client.request({ ":method": "POST", ":path": "/api/stream", "content-type": "application/json", ...auth() });
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => resolve(JSON.parse(body)));
    req.on("error", reject);
    req.end(JSON.stringify({ name, profiles: [{ name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 }] }));
  });
}

describe("HTTP/2 over TLS", () => {
  it("the public URL is https; the API answers over HTTP/2 and HTTP/1.1, errors included", async () => {
    expect(t.server.publicUrl).toMatch(/^https:\/\//);
    const created = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = client.request({ ":method": "POST", ":path": "/api/stream", "content-type": "application/json", ...auth() });
      let body = "";
      let status = 0;
      req.on("response", (h) => (status = Number(h[":status"])));
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => resolve({ status, body }));
      req.on("error", reject);
      req.end(JSON.stringify({ name: "over h2" }));
    });
    expect(created.status).toBe(201);
    const stream = JSON.parse(created.body);
    const listed = await h2get("/api/stream", auth());
    expect(listed.status).toBe(200);
    expect(JSON.parse(listed.body.toString()).map((s: { id: string }) => s.id)).toContain(stream.id);
    expect((await h2get("/api/stream/nope", auth())).status).toBe(404);
    expect((await h2get("/api/stream")).status).toBe(401);
    const h1 = await h1get("/api/stream", auth());
    expect([h1.status, h1.version]).toEqual([200, "1.1"]);
    // A file sent from disk (the player's script), over both.
    const script = await h2get("/assets/hls.min.js");
    expect(script.status).toBe(200);
    expect(script.body.length).toBeGreaterThan(100_000);
  });

  it("a live stream's LL-HLS plays over one HTTP/2 connection: master, playlists, parts, blocking reload", async () => {
    const stream = await createOverH2("live over h2");
    const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${stream.streamKey}`, { seconds: 8 });
    try {
      await waitFor("playable", async () => (await h2get(`/hls/${stream.playbackId}/index.m3u8`)).status === 200);
      const pl = HLS.parse((await h2get(`/hls/${stream.playbackId}/0/index.m3u8`)).body.toString()) as HLS.types.MediaPlaylist;
      const last = pl.segments[pl.segments.length - 1]!;
      const msn = last.uri ? last.mediaSequenceNumber + 1 : last.mediaSequenceNumber;
      const part = last.uri ? 0 : last.parts.filter((p) => !p.hint).length;
      // The blocking reload and the hinted part, in flight together on the one connection.
      const hint = last.parts.find((p) => p.hint)!.uri;
      const [reload, hinted] = await Promise.all([
        h2get(`/hls/${stream.playbackId}/0/index.m3u8?_HLS_msn=${msn}&_HLS_part=${part}`, { "accept-encoding": "gzip" }),
        h2get(`/hls/${stream.playbackId}/0/${hint}`),
      ]);
      expect(reload.status).toBe(200);
      expect(reload.headers["content-encoding"]).toBe("gzip");
      expect(hinted.status).toBe(200);
      expect(hinted.headers["content-type"]).toBe("video/mp4");
      expect(hinted.body.subarray(4, 8).toString("latin1")).toBe("moof");
    } finally {
      push.child.kill("SIGKILL");
      await push.exited;
    }
  });

  it("takes a publish over RTMPS on its own port (ffmpeg to rtmps://), which plays like any other", async () => {
    expect(t.server.rtmpsPort).toBeGreaterThan(0);
    const stream = await createOverH2("live over rtmps");
    const push = pushTestStream(`rtmps://127.0.0.1:${t.server.rtmpsPort}/live/${stream.streamKey}`, { seconds: 6 });
    try {
      await waitFor("playable", async () => (await h2get(`/hls/${stream.playbackId}/0/index.m3u8`)).status === 200);
      const session = await waitFor("the session", async () => {
        const r = await h2get(`/api/stream/${stream.id}/sessions`, auth());
        return (JSON.parse(r.body.toString()) as { id: string }[])[0];
      });
      expect(session.id).toBeTruthy();
    } finally {
      push.child.kill("SIGKILL");
      await push.exited;
    }
    // A plain-RTMP client on the RTMPS port gets no stream (the TLS handshake fails).
    const plain = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpsPort}/live/${stream.streamKey}`, { seconds: 1 });
    expect((await plain.exited).code).not.toBe(0);
  });
});
