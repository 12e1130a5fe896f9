import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import * as HLS from "hls-parser";
import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { apiClient, tempDir, type Api } from "../helpers/server";
import { startServerProcess, type ServerProcess } from "../helpers/serverProcess";

// Held-open LL-HLS requests under hostile load: 10,000 blocking playlist reloads on a
// real server in its own process (as an operator runs it), sent over raw sockets. Past the caps
// they get 503 with Retry-After at once; /healthz keeps answering within 100 ms all along (a
// probe in a process of its own, so this process's own work does not delay it); the requests
// held open are answered once the stream reaches what they asked for.

HLS.setOptions({ strictMode: true, silent: true });

const PER_PLAYBACK = 500;
// Below the per-playback cap, so the per-client test meets its own cap, not the stream's.
const PER_CLIENT = 200;
const FLOOD = 10_000;
/** Source addresses of the flood (loopback has all of 127/8): under the per-client cap each. */
const SOURCES = Array.from({ length: 10 }, (_, i) => `127.0.0.${i + 2}`);

let server: ServerProcess;
let api: Api;
let origin: string;
let admin: string;
let push: Push;
let playbackId: string;
const dataDir = tempDir();

/** A port free now, for the operator's listener (the banner's helper reads only the API's). */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

beforeAll(async () => {
  const adminPort = await freePort();
  admin = `http://127.0.0.1:${adminPort}`;
  server = await startServerProcess(dataDir, {
    ADMIN_PORT: String(adminPort),
    LOG_LEVEL: "warn",
    // Target duration 2: a blocked reload may wait 6 s.
    HLS_SEGMENT_SECONDS: "2",
    BLOCKING_WAITS_PER_PLAYBACK: String(PER_PLAYBACK),
    BLOCKING_WAITS_PER_CLIENT: String(PER_CLIENT),
  });
  api = apiClient(server.apiUrl, server.key!);
  origin = new URL(server.apiUrl).origin;
  const stream = (await api("POST", "/stream", { name: "popular", profiles: [{ name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 }] })).body;
  playbackId = stream.playbackId;
  push = pushTestStream(`${server.rtmpUrl}/${stream.streamKey}`, { seconds: 120 });
  await waitFor("the stream to be live", async () => (await api("GET", `/stream/${stream.id}`)).body.isActive, 30_000);
}, 60_000);
afterAll(async () => {
  push?.child.kill("SIGKILL");
  await server?.kill();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** One raw HTTP/1.1 request on its own connection: the status and body, whenever they come. */
function rawGet(path: string, localAddress: string, extraHeaders = ""): { sent: Promise<void>; answer: Promise<{ status: number; body: string; retryAfter?: string }> } {
  let onSent!: () => void;
  const sent = new Promise<void>((r) => (onSent = r));
  const answer = new Promise<{ status: number; body: string; retryAfter?: string }>((resolve) => {
    const { port } = new URL(origin);
    const socket = net.connect({ host: "127.0.0.1", port: Number(port), localAddress });
    let data = "";
    socket.setEncoding("latin1");
    socket.on("connect", () => socket.write(`GET ${path} HTTP/1.1\r\nHost: onair\r\n${extraHeaders}Connection: close\r\n\r\n`, () => onSent()));
    socket.on("data", (c: string) => (data += c));
    const done = () => {
      onSent();
      const [head = "", body = ""] = data.split("\r\n\r\n");
      const retryAfter = /\r\nretry-after: (\d+)/i.exec(head)?.[1];
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), body, ...(retryAfter ? { retryAfter } : {}) });
    };
    socket.on("close", done);
    socket.on("error", () => undefined);
  });
  return { sent, answer };
}

/** GET /healthz every 20 ms from a process of its own until stdin closes; then prints how long each took (ms). */
function healthProbe(url: string): { stop(): Promise<{ worstMs: number; probes: number; failures: number; latencies: number[] }> } {
  const script = `
    const http = require("node:http");
    let worst = 0, probes = 0, failures = 0, stopping = false;
    const latencies = [];
    process.stdin.on("end", () => (stopping = true)).resume();
    (function probe() {
      if (stopping) return console.log(JSON.stringify({ worstMs: worst, probes, failures, latencies }));
      const started = performance.now();
      http.get(${JSON.stringify(url)}, { agent: false, timeout: 5000 }, (res) => {
        res.resume().on("end", () => {
          const ms = performance.now() - started;
          worst = Math.max(worst, ms);
          latencies.push(Math.round(ms));
          probes++;
          if (res.statusCode !== 200) failures++;
          setTimeout(probe, 20);
        });
      }).on("error", () => (failures++, setTimeout(probe, 20)));
    })();`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((r) => child.once("close", () => r()));
  return {
    stop: async () => {
      child.stdin.end();
      await exited;
      return JSON.parse(out);
    },
  };
}

/** The playlist's last complete segment. */
async function lastComplete(): Promise<number> {
  const pl = HLS.parse(await (await fetch(`${origin}/hls/${playbackId}/0/index.m3u8`)).text()) as HLS.types.MediaPlaylist;
  return pl.segments.filter((s) => s.uri).at(-1)!.mediaSequenceNumber;
}

const HELD = /held open/;

it("10,000 blocked reloads: 503 with Retry-After past the cap, /healthz within 100 ms, the held ones answered once the segment is there", async () => {
  // The operator's listener, as an orchestrator probes it: a new connection each time, on the same event loop.
  const probe = healthProbe(`${admin}/healthz`);
  const requests: (ReturnType<typeof rawGet> & { msn: number })[] = [];
  // In waves of 100 connections: a client's SYN backlog, not the server, would otherwise be the limit.
  for (let i = 0; i < FLOOD; i += 100) {
    // Two segments past the last: what a player asks for, held up to two segments (4 s).
    const msn = (await lastComplete()) + 2;
    const wave = Array.from({ length: 100 }, (_, j) => ({ msn, ...rawGet(`/hls/${playbackId}/0/index.m3u8?_HLS_msn=${msn}`, SOURCES[(i + j) % SOURCES.length]!) }));
    requests.push(...wave);
    await Promise.all(wave.map((r) => r.sent));
  }
  const answers = await Promise.all(requests.map(async (r) => ({ msn: r.msn, ...(await r.answer) })));
  const health = await probe.stop();

  const capped = answers.filter((a) => a.status === 503 && HELD.test(a.body));
  const served = answers.filter((a) => a.status === 200);
  // Each answer is a playlist (held, then released; or sent after the segment came) or the cap's 503.
  expect(answers.filter((a) => a.status !== 200 && !(a.status === 503 && HELD.test(a.body))).map((a) => `${a.status} ${a.body.slice(0, 100)}`)).toEqual([]);
  // Sending takes seconds here, and held requests are answered as segments come: room opens up
  // as the flood goes on, so somewhat fewer than FLOOD - PER_PLAYBACK meet a full cap.
  expect(capped.length).toBeGreaterThanOrEqual(FLOOD / 2);
  expect(capped.every((a) => a.retryAfter === "1")).toBe(true);
  expect(served.length).toBeGreaterThanOrEqual(PER_PLAYBACK);
  expect(served.every((a) => (HLS.parse(a.body) as HLS.types.MediaPlaylist).segments.some((s) => s.mediaSequenceNumber === a.msn && s.uri))).toBe(true);
  expect(health.failures).toBe(0);
  expect(health.probes).toBeGreaterThan(50);
  // Within 100 ms, but for a few: on the shared 2-core test machine an idle server's probe
  // already took up to 103 ms now and then; unfixed, 10,000 held reloads left it unanswered.
  const slow = health.latencies.filter((ms) => ms > 100);
  expect({ slow, share: slow.length / health.probes < 0.05 }).toEqual({ slow, share: true });
  // None near a load balancer's health-check timeout (commonly 2 to 5 s).
  expect(health.worstMs).toBeLessThan(1000);
}, 120_000);

it.each([
  ["", ""],
  [" (a forged proxy mark changes nothing)", "x-onair-proxied: 1\r\n"],
])("one client address holds at most its share; the rest of its requests get 503 at once%s", async (_what, headers) => {
  const msn = (await lastComplete()) + 2;
  const requests = Array.from({ length: PER_CLIENT + 100 }, () => rawGet(`/hls/${playbackId}/0/index.m3u8?_HLS_msn=${msn}`, "127.0.0.20", headers));
  const answers = await Promise.all(requests.map((r) => r.answer));
  const capped = answers.filter((a) => a.status === 503 && HELD.test(a.body)).length;
  expect(capped).toBeGreaterThanOrEqual(100);
  expect(answers.filter((a) => a.status === 200).length + capped).toBe(PER_CLIENT + 100);
}, 60_000);
