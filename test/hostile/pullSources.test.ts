import { spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { FFMPEG, waitFor } from "../helpers/media";
import { apiClient, startTestServer, tempDir, useTestServer, type TestServer } from "../helpers/server";

// A hostile tenant's pull sources, against a real
// server and real ffmpeg on loopback only. 127.0.0.2 stands for a public host the tenant runs
// (listed in DESTINATION_ALLOW_HOSTS); 127.0.0.3 for the operator's internal network, which the
// policy refuses: its receiver counts every TCP connection, so an HTTP request, a CONNECT line
// or an RTSP OPTIONS all count.

const PUBLIC = "127.0.0.2";
const INTERNAL = "127.0.0.3";
const fx = useTestServer({ DESTINATION_ALLOW_HOSTS: PUBLIC, HLS_SEGMENT_SECONDS: "1" });

interface Receiver {
  port: number;
  connections: number;
  close(): Promise<void>;
}

/** What must stay out of reach: counts connections, answers nothing useful. */
async function internalReceiver(): Promise<Receiver> {
  const sockets = new Set<net.Socket>();
  const r = { port: 0, connections: 0, close: async () => undefined as void };
  const server = net.createServer((s) => {
    r.connections++;
    sockets.add(s);
    s.on("error", () => undefined);
    s.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
  });
  await new Promise<void>((resolve) => server.listen(0, INTERNAL, resolve));
  r.port = (server.address() as AddressInfo).port;
  r.close = async () => {
    sockets.forEach((s) => s.destroy());
    await new Promise((resolve) => server.close(resolve));
  };
  return r;
}

interface Origin {
  port: number;
  url(p: string): string;
  requests: { path: string; headers: http.IncomingHttpHeaders }[];
  close(): Promise<void>;
}

/** The tenant's public server: `answer` per request path (query included). */
async function origin(answer: (reqPath: string, req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Origin> {
  const requests: Origin["requests"] = [];
  const server = http.createServer((req, res) => {
    requests.push({ path: req.url ?? "", headers: req.headers });
    answer(req.url ?? "", req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, PUBLIC, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (p) => `http://${PUBLIC}:${port}${p}`,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A few seconds of HLS (H.264 + AAC, 1 s segments) in a folder: its playlist's text and segment files. */
function makeHls(seconds: number): { dir: string; playlist: string } {
  const dir = tempDir("onair-hostile-hls-");
  const made = spawnSync(FFMPEG, [
    "-hide_banner", "-nostdin", "-loglevel", "error",
    "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "aac",
    "-f", "hls", "-hls_time", "1", "-hls_list_size", "0", "-hls_playlist_type", "vod", path.join(dir, "live.m3u8"),
  ]);
  expect(made.status).toBe(0);
  return { dir, playlist: fs.readFileSync(path.join(dir, "live.m3u8"), "utf8") };
}

/** The pull of a new stream: its status once an attempt failed; the stream deleted and its ffmpeg gone. */
async function pullFails(source: string): Promise<string> {
  const { api, t } = fx;
  const s = (await api("POST", "/stream", { name: "hostile", pull: { source } })).body;
  expect(s.id).toBeDefined();
  const problem = await waitFor("the pull's attempt failed", () => t.server.pulls?.status(s.id)?.lastProblem, 20_000);
  expect((await api("GET", `/stream/${s.id}`)).body.isActive).toBe(false);
  expect((await api("DELETE", `/stream/${s.id}`)).status).toBe(204);
  await waitFor("the pull stopped", () => t.server.pulls?.status(s.id) === undefined && t.server.processes.size === 0, 10_000);
  return problem;
}

describe("hostile http(s) pull sources fetch nothing from a refused host", () => {
  let inside: Receiver;
  beforeAll(async () => {
    inside = await internalReceiver();
  });
  afterAll(() => inside.close());

  it("an ffconcat script naming an HLS playlist of internal urls (§1)", async () => {
    const inner = `#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:0\n${[1, 2, 3].map((n) => `#EXTINF:6.0,\nhttp://${INTERNAL}:${inside.port}/internal/admin/export?n=${n}&x=.ts\n`).join("")}#EXT-X-ENDLIST\n`;
    const o = await origin((p, _req, res) => res.writeHead(200).end(p.startsWith("/x.ffconcat") ? "ffconcat version 1.0\nfile inner.m3u8\n" : inner));
    try {
      const problem = await pullFails(o.url("/x.ffconcat"));
      expect(problem).toMatch(/^pull failed: the source answered an ffconcat script \(from 127\.0\.0\.2\), which onair does not read/);
      expect(inside.connections).toBe(0);
      expect(o.requests.map((r) => r.path)).not.toContain("/inner.m3u8");
    } finally {
      await o.close();
    }
  });

  it("a DASH manifest whose segments are httpproxy: and internal urls (§6)", async () => {
    const mpd = `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT6S" minBufferTime="PT2S" profiles="urn:mpeg:dash:profile:full:2011">
 <Period><AdaptationSet mimeType="video/mp2t"><Representation id="1" bandwidth="100000">
  <SegmentList duration="2"><SegmentURL media="httpproxy://${INTERNAL}:${inside.port}/dash-target:6379"/><SegmentURL media="http://${INTERNAL}:${inside.port}/seg.ts"/></SegmentList>
 </Representation></AdaptationSet></Period></MPD>\n`;
    const o = await origin((_p, _req, res) => res.writeHead(200, { "content-type": "application/dash+xml" }).end(mpd));
    try {
      const problem = await pullFails(o.url("/proxy.mpd"));
      expect(problem).toMatch(/the source answered a DASH manifest/);
      expect(inside.connections).toBe(0);
    } finally {
      await o.close();
    }
  });

  it("an AES-128 playlist whose segment is crypto-wrapped httpproxy: (§6), and a master naming internal renditions", async () => {
    const crypto = `#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-KEY:METHOD=AES-128,URI="key.bin",IV=0x00000000000000000000000000000000\n#EXTINF:2.0,\nhttpproxy:${INTERNAL}:${inside.port}/hls-crypto-target:80/a.ts\n#EXTINF:2.0,\nhttpproxy://${INTERNAL}:${inside.port}/plain-target:80/b.ts\n#EXT-X-ENDLIST\n`;
    const master = `#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="x",URI=http://${INTERNAL}:${inside.port}/audio.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=100000,AUDIO="a"\nhttp://${INTERNAL}:${inside.port}/video.m3u8\n`;
    const o = await origin((p, _req, res) => {
      if (p === "/key.bin") return res.writeHead(200).end(Buffer.alloc(16));
      res.writeHead(200, { "content-type": "application/vnd.apple.mpegurl" }).end(p === "/master.m3u8" ? master : crypto);
    });
    try {
      expect(await pullFails(o.url("/crypto.m3u8"))).toMatch(/^pull failed: the source led to an httpproxy: url, refused by the outbound policy/);
      expect(await pullFails(o.url("/master.m3u8"))).toMatch(/^pull failed: the source led to 127\.0\.0\.3, refused by the outbound policy/);
      expect(inside.connections).toBe(0);
      // The refusal is logged as the operator's problem, not handed over as a redirect: the
      // gateway counted it.
      expect(fx.t.server.pulls!.gatewayStats!.refused).toBeGreaterThanOrEqual(2);
    } finally {
      await o.close();
    }
  });
});

/** Every process whose parent is this one (the server runs in the test's process). */
function children(): number[] {
  return fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).map(Number).filter((pid) => {
    try {
      // Field 4 of stat is the parent's pid; the command name (field 2) may hold spaces, in brackets.
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === process.pid;
    } catch {
      return false;
    }
  });
}

const cmdline = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
  } catch {
    return "";
  }
};

describe("a pull's secrets", () => {
  it("an HLS pull with a password, a signed query and token headers plays, its cookie stays with the source's origin, and none of them is in any child's argv (§8)", async () => {
    const { api, t } = fx;
    const hls = makeHls(30);
    const segments = await origin((p, req, res) => {
      // Another origin (a CDN): the pull's headers reach it, but not its credentials.
      if (req.headers["x-cdn-token"] !== "HeaderSecret456" || req.headers.cookie !== undefined) return res.writeHead(403).end();
      const file = path.join(hls.dir, path.basename(p));
      if (!fs.existsSync(file)) return res.writeHead(404).end();
      res.writeHead(200).end(fs.readFileSync(file));
    });
    const basic = `Basic ${Buffer.from("viewer:PullPassw0rd").toString("base64")}`;
    const playlist = hls.playlist.replace(/^live/gm, segments.url("/live"));
    const source = await origin((p, req, res) => {
      if (req.headers.authorization !== basic || req.headers.cookie !== "session=CookieSecret789") return res.writeHead(401, { "www-authenticate": "Basic" }).end();
      if (p !== "/live.m3u8?token=SignedToken123") return res.writeHead(403).end();
      res.writeHead(200, { "content-type": "application/vnd.apple.mpegurl" }).end(playlist);
    });
    try {
      const s = (await api("POST", "/stream", {
        name: "secret source",
        pull: { source: `http://viewer:PullPassw0rd@${PUBLIC}:${source.port}/live.m3u8?token=SignedToken123`, headers: { "X-Cdn-Token": "HeaderSecret456", Cookie: "session=CookieSecret789" } },
      })).body;
      await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive, 25_000);
      // The origins checked them: the playlist asked with the url's password and query, the segments with the header.
      expect(source.requests.some((r) => r.path === "/live.m3u8?token=SignedToken123" && r.headers.authorization === basic)).toBe(true);
      expect(segments.requests.some((r) => r.path.endsWith(".ts") && r.headers["x-cdn-token"] === "HeaderSecret456")).toBe(true);
      expect(segments.requests.filter((r) => r.headers.cookie !== undefined || r.headers.authorization !== undefined)).toEqual([]);
      const pids = [...new Set([...children(), ...t.server.processes.pids()])];
      expect(pids.length).toBeGreaterThanOrEqual(1); // the pull (a copied source is packaged with no process)
      for (const pid of pids) {
        const line = cmdline(pid);
        expect(line).not.toBe("");
        for (const secret of ["PullPassw0rd", "SignedToken123", "HeaderSecret456", "CookieSecret789", `${PUBLIC}:${source.port}`]) expect(line).not.toContain(secret);
      }
      expect((await api("DELETE", `/stream/${s.id}`)).status).toBe(204);
      await waitFor("no ffmpeg of the server left", () => t.server.processes.size === 0, 10_000);
    } finally {
      await source.close();
      await segments.close();
      fs.rmSync(hls.dir, { recursive: true, force: true });
    }
  });
});

/** A source that answers 200 and then one byte every 4 s: an ffmpeg reading it never gets anywhere (§4). */
async function dripOrigin(): Promise<Origin & { stop(): void }> {
  const timers: NodeJS.Timeout[] = [];
  const o = await origin((_p, _req, res) => {
    res.writeHead(200, { "content-type": "video/mp2t" });
    timers.push(setInterval(() => res.write("G"), 4000));
  });
  return { ...o, stop: () => timers.forEach(clearInterval) };
}

/** Creates `n` pulled streams of one user while sampling how many ffmpeg the server runs; the highest count seen. */
async function pullMany(t: TestServer, key: string, n: number, source: string, sampleMs: number): Promise<{ most: number; ids: string[] }> {
  const api = apiClient(t.apiUrl, key);
  let most = 0;
  const sample = setInterval(() => {
    // This server's ffmpeg, as its registry and /proc see them (another server of this file may
    // still be stopping pulls of its own: those are not this node's).
    const alive = t.server.processes.pids().filter((pid) => fs.existsSync(`/proc/${pid}`));
    most = Math.max(most, t.server.processes.size, alive.length);
  }, 20);
  try {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await api("POST", "/stream", { name: `drip ${i}`, pull: { source: `${source}?n=${i}` } })).body.id);
    await waitFor(`${n} pulls known`, () => ids.every((id) => t.server.pulls?.status(id) !== undefined), 10_000);
    await new Promise((resolve) => setTimeout(resolve, sampleMs));
    return { most, ids };
  } finally {
    clearInterval(sample);
  }
}

describe("pulls are counted before their ffmpeg starts (§4)", () => {
  it("12 pulls of one user with a live cap of 10 run at most 10 ffmpeg; the others wait, saying which cap", async () => {
    const { t } = fx;
    const drip = await dripOrigin();
    try {
      const key = await t.keyFor("carol");
      const { most, ids } = await pullMany(t, key, 12, drip.url("/live.ts"), 4000);
      expect(most).toBeLessThanOrEqual(10);
      expect(t.server.pulls!.holding).toBe(10);
      const waiting = ids.map((id) => t.server.pulls!.status(id)!).filter((st) => !st.running);
      expect(waiting.length).toBeGreaterThanOrEqual(2);
      expect(waiting.some((st) => /MAX_LIVE_STREAMS_PER_USER=10/.test(st.lastProblem ?? ""))).toBe(true);
      const api = apiClient(t.apiUrl, key);
      for (const id of ids) expect((await api("DELETE", `/stream/${id}`)).status).toBe(204);
      await waitFor("no ffmpeg of the server left", () => t.server.processes.size === 0, 15_000);
    } finally {
      drip.stop();
      await drip.close();
    }
  });

  it("MAX_PULLS_PER_NODE holds for all users together", async () => {
    const t = await startTestServer({ DESTINATION_ALLOW_HOSTS: PUBLIC, MAX_PULLS_PER_NODE: "3" });
    const drip = await dripOrigin();
    try {
      const first = await pullMany(t, t.key, 2, drip.url("/a.ts"), 0);
      const second = await pullMany(t, await t.keyFor("dave"), 3, drip.url("/b.ts"), 4000);
      expect(Math.max(first.most, second.most)).toBeLessThanOrEqual(3);
      expect(t.server.pulls!.holding).toBe(3);
      const statuses = [...first.ids, ...second.ids].map((id) => t.server.pulls!.status(id)!);
      expect(statuses.some((st) => /MAX_PULLS_PER_NODE=3/.test(st.lastProblem ?? ""))).toBe(true);
    } finally {
      await t.stop();
      drip.stop();
      await drip.close();
    }
  });
});

describe("RTSP redirects (§10)", () => {
  it("an RTSP source's 3xx is refused by onair's relay: the redirect target gets nothing, the status says where it led", async () => {
    const inside = await internalReceiver();
    const seen: string[] = [];
    const basic = `Basic ${Buffer.from("cam:RtspPassw0rd").toString("base64")}`;
    const rtsp = net.createServer((s) => {
      let buf = "";
      s.on("error", () => undefined);
      s.on("data", (d) => {
        buf += d.toString("latin1");
        for (let end = buf.indexOf("\r\n\r\n"); end >= 0; end = buf.indexOf("\r\n\r\n")) {
          const head = buf.slice(0, end);
          buf = buf.slice(end + 4);
          seen.push(head);
          const cseq = /CSeq: *(\d+)/i.exec(head)?.[1] ?? "1";
          if (!head.includes(`Authorization: ${basic}`)) s.write(`RTSP/1.0 401 Unauthorized\r\nCSeq: ${cseq}\r\nWWW-Authenticate: Basic realm="cam"\r\n\r\n`);
          else s.write(`RTSP/1.0 302 Moved\r\nCSeq: ${cseq}\r\nLocation: rtsp://${INTERNAL}:${inside.port}/internal\r\n\r\n`);
        }
      });
    });
    await new Promise<void>((resolve) => rtsp.listen(0, PUBLIC, resolve));
    try {
      const port = (rtsp.address() as AddressInfo).port;
      const problem = await pullFails(`rtsp://cam:RtspPassw0rd@${PUBLIC}:${port}/stream1`);
      expect(problem).toMatch(/^pull failed: the RTSP source redirected to 127\.0\.0\.3, which onair does not follow/);
      // The source was reached through the relay, with the url's credentials; its redirect led nowhere.
      expect(seen.some((h) => h.includes(`Authorization: ${basic}`))).toBe(true);
      expect(inside.connections).toBe(0);
    } finally {
      rtsp.close();
      await inside.close();
    }
  });
});

describe("start-pull under a loop", () => {
  it("skips the back-off at most about once a second per stream", async () => {
    const { api, t } = fx;
    let connections = 0;
    // A source that takes the connection and drops it at once: every attempt fails fast.
    const source = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((resolve) => source.listen(0, PUBLIC, resolve));
    try {
      const s = (await api("POST", "/stream", { name: "flaky", pull: { source: `rtmp://${PUBLIC}:${(source.address() as AddressInfo).port}/live/x` } })).body;
      await waitFor("the first attempt failed", () => t.server.pulls?.status(s.id)?.lastProblem, 15_000);
      const before = connections;
      const started = Date.now();
      while (Date.now() - started < 4000) {
        expect((await api("POST", `/stream/${s.id}/start-pull`)).status).toBe(204);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // About one a second (4), one more at the edges, and perhaps one the back-off made itself.
      expect(connections - before).toBeLessThanOrEqual(6);
      expect(connections - before).toBeGreaterThanOrEqual(2);
      expect((await api("DELETE", `/stream/${s.id}`)).status).toBe(204);
      await waitFor("no ffmpeg of the server left", () => t.server.processes.size === 0, 10_000);
    } finally {
      source.close();
    }
  });
});
