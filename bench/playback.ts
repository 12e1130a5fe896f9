// Playback access control benchmark: `npm run bench:playback`.
//
// What the gate (src/playback/gate.ts, tokens.ts) costs on HLS requests, measured as players
// make them: onair as `npm start` runs it (its own process, a temp DATA_DIR), ffmpeg pushing
// testsrc2 over RTMP to two passthrough streams, one public and one behind a `jwt` policy, and
// autocannon asking for the URIs the service itself hands out:
//   master      `?jwt=` on the jwt stream (verdicts are cached 5 s: mostly a cache hit, plus a
//               session token minted per answer); the public one next to it
//   media       the variant URI with its session token `?s=`; the jwt stream's answer is the
//               playlist re-written per request with a fresh media token in every URI (and, with
//               gzip, compressed per request instead of once per playlist version)
//   segment     the newest segment, from memory; the jwt stream's with its media token `?m=`
// The baseline, in the same run and beside the same pushes: a bare Express 5 app in its own
// process answering fixed bytes: a copy of the public media playlist (its window full) and of a
// segment. The machines are small and shared: compare the ratios, not the bare numbers.
//
// autocannon 8 runs in this process (both servers are processes of their own) with its body
// collection switched off: it appends every response body to a string, and UTF-8-decoding 70 KB
// of video per response capped it near 1,000 req/s on 2 cores, whoever served the segment.
//
// Settings: BENCH_CONNECTIONS (20), BENCH_DURATION in seconds per run (5, after a 2 s warm-up).

import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
// No types for this internal module: what the patch below replaces is all that is used of it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const PipelinedRequestsQueue = require("autocannon/lib/pipelinedRequestsQueue") as { prototype: { addBody(data: Buffer): void } };
import { importPKCS8, SignJWT } from "jose";
import { pushTestStream } from "../test/helpers/media";
import { startServerProcess, type ServerProcess } from "../test/helpers/serverProcess";
import { Child, exitOnSignal, ffmpegVersion, fixed, formatTable, positiveIntFromEnv, runProblems, type RunOutcome, childPids, killPids, stopServerProcess } from "./lib";

const ROOT = path.resolve(__dirname, "..");
const FFMPEG = process.env.FFMPEG_PATH || "ffmpeg";
const CONNECTIONS = positiveIntFromEnv("BENCH_CONNECTIONS", 20, 10_000);
const DURATION_S = positiveIntFromEnv("BENCH_DURATION", 5, 600);
const WARMUP_S = 2;
/** Pushes outlast any run; they are killed at the end. */
const PUSH_SECONDS = 600;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

let server: ServerProcess | undefined;
let baseline: Child | undefined;
const pushes: ChildProcess[] = [];



exitOnSignal(() => {
  for (const p of pushes) p.kill("SIGKILL");
  baseline?.signal("SIGKILL");
  killPids(childPids(server?.pid));
  void server?.kill();
});


// ---------------------------------------------------------------------------------------------
// onair, its streams and the URIs it hands a player

async function api(method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(server!.apiUrl + p, {
    method,
    headers: { authorization: `Bearer ${server!.key}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

interface Stream {
  id: string;
  streamKey: string;
  playbackId: string;
}

/** A JWT as a Livepeer app signs one: ES256 with the private key as the API returned it, `pub` its publicKey as returned. */
async function signJwt(key: { privateKey: string; publicKey: string }, playbackId: string): Promise<string> {
  const privateKey = await importPKCS8(Buffer.from(key.privateKey, "base64").toString("utf8"), "ES256");
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ sub: playbackId, pub: key.publicKey })
    .setProtectedHeader({ alg: "ES256", typ: "JWT" })
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(privateKey);
}

const uriLines = (text: string) => text.split("\n").filter((l) => l !== "" && !l.startsWith("#"));

async function getText(url: string): Promise<string> {
  const res = await fetch(url);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return text;
}

/** What a player is handed, fresh: tokens expire (PLAYBACK_TOKEN_SECONDS) and segments leave memory. */
class Player {
  constructor(
    private readonly origin: string,
    private readonly stream: Stream,
    private readonly jwt?: string,
  ) {}

  masterUrl(): string {
    return `${this.origin}/hls/${this.stream.playbackId}/index.m3u8${this.jwt ? `?jwt=${this.jwt}` : ""}`;
  }

  /** The first variant's URI from the master playlist (it carries `?s=<session token>`). */
  async mediaUrl(): Promise<string> {
    const variant = uriLines(await getText(this.masterUrl()))[0];
    if (!variant?.includes("?s=")) throw new Error(`the master playlist of ${this.stream.playbackId} names no variant with a session token: ${variant}`);
    return `${this.origin}/hls/${this.stream.playbackId}/${variant}`;
  }

  /** The newest complete segment the media playlist names (with `?m=` on the jwt stream). */
  async segmentUrl(): Promise<string> {
    const media = await this.mediaUrl();
    const playlist = await getText(media);
    const segment = uriLines(playlist).at(-1);
    if (!segment || !/\.m4s(\?|$)/.test(segment)) throw new Error(`no segment in ${media}:\n${playlist}`);
    if (this.jwt && !segment.includes("?m=")) throw new Error(`the jwt stream's segment URI carries no media token: ${segment}`);
    return new URL(segment, media).toString();
  }
}

/** Live, its playlist window full (a segment has left it): playlists are at their steady size from then on. */
async function waitPlayable(player: Player, stream: Stream): Promise<void> {
  const deadline = Date.now() + 60_000;
  let first: string | undefined;
  for (;;) {
    try {
      const sequence = /#EXT-X-MEDIA-SEQUENCE:(\d+)/.exec(await getText(await player.mediaUrl()))?.[1];
      first ??= sequence;
      if (sequence !== first) return;
    } catch {
      // not live yet
    }
    if (Date.now() > deadline) throw new Error(`stream ${stream.id} was not playable within 60 s: ${server?.log().slice(-2000)}`);
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------
// The baseline: Express 5 with routing and res.send of fixed bytes, in its own process as onair is

const BASELINE_SOURCE = `
const fs = require("node:fs");
const http = require("node:http");
const express = require("express");
const playlist = fs.readFileSync(process.env.BENCH_PLAYLIST_FILE);
const segment = fs.readFileSync(process.env.BENCH_SEGMENT_FILE);
const app = express();
app.get("/playlist", (_req, res) => { res.set({ "content-type": "application/vnd.apple.mpegurl", "cache-control": "no-cache" }); res.send(playlist); });
app.get("/segment", (_req, res) => { res.set({ "content-type": "video/mp4", "cache-control": "public, max-age=86400, immutable" }); res.send(segment); });
const server = http.createServer(app);
server.keepAliveTimeout = 65000;
server.listen(0, "127.0.0.1", () => console.log("port " + server.address().port));
process.on("SIGTERM", () => { server.close(() => process.exit(0)); server.closeAllConnections(); });
`;

/** The bare app, answering these files' bytes at /playlist and /segment. */
async function startBaseline(playlistFile: string, segmentFile: string): Promise<string> {
  let port: number | undefined;
  baseline = new Child("bare Express", process.execPath, ["-e", BASELINE_SOURCE], {
    cwd: ROOT,
    env: { ...process.env, BENCH_PLAYLIST_FILE: playlistFile, BENCH_SEGMENT_FILE: segmentFile },
    onStdout: (l) => (port ??= Number(/^port (\d+)/.exec(l)?.[1]) || undefined),
  });
  const deadline = Date.now() + 20_000;
  while (port === undefined) {
    if (!baseline.isRunning || Date.now() > deadline) throw new Error(`the baseline did not start: ${baseline.describeExit()}`);
    await sleep(50);
  }
  return `http://127.0.0.1:${port}`;
}

// ---------------------------------------------------------------------------------------------
// Load

type Kind = "playlist" | "segment";

interface Scenario {
  label: string;
  kind: Kind;
  /** The bare row of its kind, or which onair side (jwt rows are compared with the public row of the same `pair`). */
  side: "bare" | "public" | "jwt";
  pair?: string;
  gzip?: boolean;
  /** Resolved just before the run: tokens and segments are fresh. */
  url(): Promise<string>;
}

interface Measured {
  scenario: Scenario;
  bytes: number;
  result: autocannon.Result;
}

// autocannon keeps response bodies only for expectBody/verifyBody/onResponse (none here): without
// this it decodes every body to a string and measures its own UTF-8 decoder on the segment rows.
// Byte counts come from elsewhere (addByteCount) and are unaffected.
PipelinedRequestsQueue.prototype.addBody = () => undefined;

/** In this process's event loop: both servers run in processes of their own. */
const fire = (url: string, headers: Record<string, string>, duration: number) =>
  autocannon({ url, headers, connections: CONNECTIONS, duration });

async function measure(s: Scenario): Promise<Measured> {
  const url = await s.url();
  const headers: Record<string, string> = s.gzip ? { "accept-encoding": "gzip" } : {};
  const probe = await fetch(url, { headers: s.gzip ? headers : { "accept-encoding": "identity" } });
  if (probe.status !== 200) throw new Error(`${s.label}: GET ${url} answered ${probe.status}: ${(await probe.text()).slice(0, 300)}`);
  // On the wire: compressed size for the gzip rows (fetch decompresses, content-length does not lie).
  const bytes = Number(probe.headers.get("content-length")) || (await probe.arrayBuffer()).byteLength;
  process.stderr.write(`  ${s.label}: warm-up ${WARMUP_S} s, measuring ${DURATION_S} s\n`);
  await fire(url, headers, WARMUP_S);
  return { scenario: s, bytes, result: await fire(url, headers, DURATION_S) };
}

const problemsOf = (m: Measured) => runProblems(m.scenario.label, m.result as RunOutcome);

function report(measured: Measured[]): string[] {
  const bare = new Map<Kind, autocannon.Result>();
  const publics = new Map<string, autocannon.Result>();
  for (const m of measured) {
    if (m.scenario.side === "bare") bare.set(m.scenario.kind, m.result);
    if (m.scenario.side === "public") publics.set(m.scenario.pair!, m.result);
  }
  const rows = measured.map((m) => {
    const r = m.result;
    const b = m.scenario.side === "bare" ? undefined : bare.get(m.scenario.kind);
    const p = m.scenario.side === "jwt" ? publics.get(m.scenario.pair!) : undefined;
    return [
      m.scenario.label,
      String(m.bytes),
      fixed(r.requests.average, 0),
      fixed(r.latency.p50, 0),
      fixed(r.latency.p99, 0),
      b ? fixed(r.requests.average / b.requests.average, 2) : "-",
      b ? fixed(r.latency.p99 / b.latency.p99, 2) : "-",
      p ? fixed(r.requests.average / p.requests.average, 2) : "-",
      p ? fixed(r.latency.p99 / p.latency.p99, 2) : "-",
    ];
  });
  const lines = [
    "",
    "onair playback access control (HLS) benchmark",
    `  machine: ${os.cpus().length} cores, node ${process.version}, ${ffmpegVersion(FFMPEG)}; ${CONNECTIONS} connections, ${DURATION_S} s per run (+${WARMUP_S} s warm-up)`,
    "  onair and the bare Express baseline each in their own process, two 320x180 passthrough pushes live throughout,",
    "  autocannon (bodies not kept) in this process: all share the CPU. Compare ratios, not absolute numbers;",
    "  latency is recorded in whole milliseconds, so small p99 ratios are coarse. bytes: one answer's body on the wire.",
    "",
    formatTable(["request", "bytes", "req/s (mean)", "p50 ms", "p99 ms", "req/s vs bare", "p99 vs bare", "req/s jwt/public", "p99 jwt/public"], rows),
  ];
  const problems = measured.map(problemsOf).filter((p): p is string => p !== undefined);
  if (problems.length) lines.push("", "FAILED REQUESTS (these rows measured errors, not the endpoint):", ...problems.map((p) => `  ${p}`));
  return lines;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-playback-"));
  try {
    server = await startServerProcess(dataDir, { LOG_LEVEL: "warn", API_RATE_LIMIT: "0" });
    const origin = server.apiUrl.replace(/\/api$/, "");
    const key = (await api("POST", "/access-control/signing-key", {})) as { privateKey: string; publicKey: string };
    // Passthrough (no profiles): the pushes cost little CPU, leaving it to the requests measured.
    const open = (await api("POST", "/stream", { name: "bench public", profiles: [] })) as Stream;
    const gated = (await api("POST", "/stream", { name: "bench jwt", profiles: [], playbackPolicy: { type: "jwt" } })) as Stream;
    for (const s of [open, gated]) {
      const push = pushTestStream(`${server.rtmpUrl}/${s.streamKey}`, { seconds: PUSH_SECONDS });
      pushes.push(push.child);
    }
    const pub = new Player(origin, open);
    const jwt = new Player(origin, gated, await signJwt(key, gated.playbackId));
    await Promise.all([waitPlayable(pub, open), waitPlayable(jwt, gated)]);

    // The baseline answers the public stream's media playlist and segment, as fixed bytes.
    const playlistFile = path.join(dataDir, "baseline.m3u8");
    const segmentFile = path.join(dataDir, "baseline.m4s");
    fs.writeFileSync(playlistFile, await getText(await pub.mediaUrl()));
    fs.writeFileSync(segmentFile, Buffer.from(await (await fetch(await pub.segmentUrl())).arrayBuffer()));
    const bareOrigin = await startBaseline(playlistFile, segmentFile);

    // Each onair row near its baseline, jwt right after public: similar machine conditions.
    const scenarios: Scenario[] = [
      { label: "bare GET, playlist-sized", kind: "playlist", side: "bare", url: async () => `${bareOrigin}/playlist` },
      { label: "public master", kind: "playlist", side: "public", pair: "master", url: async () => pub.masterUrl() },
      { label: "jwt master ?jwt= (verdict cached)", kind: "playlist", side: "jwt", pair: "master", url: async () => jwt.masterUrl() },
      { label: "public media playlist ?s=", kind: "playlist", side: "public", pair: "media", url: () => pub.mediaUrl() },
      { label: "jwt media playlist ?s= (re-written)", kind: "playlist", side: "jwt", pair: "media", url: () => jwt.mediaUrl() },
      { label: "public media playlist ?s=, gzip", kind: "playlist", side: "public", pair: "media gzip", gzip: true, url: () => pub.mediaUrl() },
      { label: "jwt media playlist ?s=, gzip", kind: "playlist", side: "jwt", pair: "media gzip", gzip: true, url: () => jwt.mediaUrl() },
      { label: "bare GET, segment-sized", kind: "segment", side: "bare", url: async () => `${bareOrigin}/segment` },
      { label: "public segment", kind: "segment", side: "public", pair: "segment", url: () => pub.segmentUrl() },
      { label: "jwt segment ?m=", kind: "segment", side: "jwt", pair: "segment", url: () => jwt.segmentUrl() },
    ];
    process.stderr.write("running:\n");
    const measured: Measured[] = [];
    for (const s of scenarios) measured.push(await measure(s));
    if (pushes.some((p) => p.exitCode !== null || p.signalCode !== null)) throw new Error("a push ended during the runs: the streams were not live throughout");

    process.stdout.write(report(measured).join("\n") + "\n");
    if (measured.some((m) => problemsOf(m) !== undefined)) process.exitCode = 1;
  } finally {
    for (const p of pushes) p.kill("SIGKILL");
    await baseline?.stop(3000, "SIGTERM");
    await stopServerProcess(server);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:playback failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exitCode = 1;
});
