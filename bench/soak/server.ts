// The onair server under test: started as `npm start` runs it (its own process, on a throwaway
// DATA_DIR and free ports), with its log tallied and its event loop watched; and this bench's
// client of its API and /metrics.

import fs from "node:fs";
import path from "node:path";
import { Child } from "../lib";
import { apiAgent, request, type HttpResult } from "./httpClient";
import { now, sleep } from "./runState";
import { SAMPLE_MS, type Settings } from "./settings";

const ROOT = path.resolve(__dirname, "../..");
const STARTUP_TIMEOUT_MS = 60_000;

/**
 * Preloaded into the server (`node --import <this file>`), from the bench's temp dir: the server's
 * own event loop delay, printed on stdout every SAMPLE_MS. It tells a slow server (a blocked
 * loop) from a slow machine; src/ is left as it is.
 */
const PROBE_PREFIX = "soak-probe ";
const EVENT_LOOP_PROBE = `import { monitorEventLoopDelay } from "node:perf_hooks";
const h = monitorEventLoopDelay({ resolution: 10 });
h.enable();
// The histogram records each 10 ms timer's whole interval: the delay is what exceeds it.
const late = (ns) => Math.max(0, ns / 1e6 - 10);
setInterval(() => {
  process.stdout.write(${JSON.stringify(PROBE_PREFIX)} + JSON.stringify({ p50: late(h.percentile(50)), p99: late(h.percentile(99)), max: late(h.max) }) + "\\n");
  h.reset();
}, ${SAMPLE_MS}).unref();
`;

export interface LogTally {
  warn: number;
  error: number;
  /** By message: count and the first line's fields, cut short. */
  messages: Map<string, { level: string; count: number; example: string }>;
  /** Lines that are not pino JSON (a crash's stack trace, a warning of Node). */
  other: string[];
}

/** One reading of the server's event loop delay (ms) over the SAMPLE_MS before `at`. */
export interface LoopDelay {
  at: number;
  p50: number;
  p99: number;
  max: number;
}

export interface Onair {
  child: Child;
  loopDelays: LoopDelay[];
  pid: number;
  baseUrl: string;
  /** The operator's listener (/metrics). */
  adminUrl: string;
  apiUrl: string;
  rtmpUrl: string;
  apiKey: string;
  ffmpeg: string;
  dataDir: string;
  logs: LogTally;
}

function tallyLogLine(logs: LogTally, line: string): void {
  let entry: { level?: number; msg?: string; [k: string]: unknown };
  try {
    entry = JSON.parse(line) as typeof entry;
  } catch {
    if (line.trim() && logs.other.length < 20) logs.other.push(line.slice(0, 300));
    return;
  }
  const level = (entry.level ?? 0) >= 50 ? "error" : "warn";
  logs[level]++;
  const msg = String(entry.msg ?? "(no msg)");
  const seen = logs.messages.get(msg);
  if (seen) seen.count++;
  else {
    const { level: _l, time: _t, pid: _p, hostname: _h, service: _s, msg: _m, ...fields } = entry;
    logs.messages.set(msg, { level, count: 1, example: JSON.stringify(fields).slice(0, 300) });
  }
}

export async function startOnair(workDir: string, dataDir: string, settings: Settings): Promise<Onair> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: "0",
    RTMP_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    HLS_SEGMENT_SECONDS: String(settings.segmentSeconds),
    API_RATE_LIMIT: "0",
    MAX_LIVE_STREAMS_PER_USER: String(Math.max(10, settings.publishers)),
    // The defaults of a single node, whatever this shell has set.
    REDIS_URL: "",
    PUBLIC_URL: "",
    RTMP_PUBLIC_URL: "",
    // The webhook receiver is the bench's own, on loopback.
    ALLOW_PRIVATE_DESTINATIONS: "",
    DESTINATION_ALLOW_HOSTS: "127.0.0.1,localhost",
  };
  const logs: LogTally = { warn: 0, error: 0, messages: new Map(), other: [] };
  const probe = path.join(workDir, "event-loop-probe.mjs");
  fs.writeFileSync(probe, EVENT_LOOP_PROBE);
  let banner = "";
  const loopDelays: LoopDelay[] = [];
  const child = new Child("onair server", process.execPath, ["--import", "tsx", "--import", probe, "src/main.ts"], {
    cwd: ROOT,
    env,
    onStdout: (line) => {
      if (!line.startsWith(PROBE_PREFIX)) banner += line + "\n";
      else loopDelays.push({ at: now(), ...(JSON.parse(line.slice(PROBE_PREFIX.length)) as Omit<LoopDelay, "at">) });
    },
    onStderr: (line) => tallyLogLine(logs, line),
  });
  const started = now();
  for (;;) {
    const key = /API key:\s+(\S+)/.exec(banner)?.[1];
    const api = /API:\s+(http:\/\/\S+)/.exec(banner)?.[1];
    const rtmp = /RTMP ingest:\s+rtmp:\/\/[^:/]+:(\d+)\//.exec(banner)?.[1];
    const ffmpeg = /ffmpeg:\s+(.+)$/m.exec(banner)?.[1];
    const admin = /operator:\s+(http:\/\/\S+)\/metrics/.exec(banner)?.[1];
    if (key && api && rtmp && ffmpeg && admin) {
      const ffmpegPath = /^(\S+) \(from /.exec(ffmpeg)?.[1];
      if (!ffmpegPath) throw new Error(`the server found no ffmpeg (${ffmpeg}): install it or set FFMPEG_PATH`);
      return {
        child,
        loopDelays,
        pid: child.pid!,
        baseUrl: api.replace(/\/api\/?$/, ""),
        adminUrl: admin,
        apiUrl: api.replace(/\/$/, ""),
        rtmpUrl: `rtmp://127.0.0.1:${rtmp}/live`,
        apiKey: key,
        ffmpeg: ffmpegPath,
        dataDir,
        logs,
      };
    }
    if (!child.isRunning) throw new Error(`the server did not start: ${child.describeExit()}`);
    if (now() - started > STARTUP_TIMEOUT_MS) throw new Error(`no start-up banner with an API key within ${STARTUP_TIMEOUT_MS / 1000} s; stdout so far: ${banner.slice(0, 500)}`);
    await sleep(100);
  }
}

export async function api(o: Onair, method: string, pathname: string, body?: unknown): Promise<HttpResult> {
  const headers: Record<string, string> = { authorization: `Bearer ${o.apiKey}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  return request(apiAgent, `${o.apiUrl}${pathname}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

export async function apiJson<T>(o: Onair, method: string, pathname: string, expect: number, body?: unknown): Promise<T> {
  const res = await api(o, method, pathname, body);
  if (res.status !== expect) throw new Error(`${method} /api${pathname} returned ${res.status}: ${res.body.toString("utf8").slice(0, 300)}`);
  return JSON.parse(res.body.toString("utf8")) as T;
}

export async function scrapeMetrics(o: Onair): Promise<string> {
  const res = await request(apiAgent, `${o.adminUrl}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics returned ${res.status}`);
  return res.body.toString("utf8");
}
