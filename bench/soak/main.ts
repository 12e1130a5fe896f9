// Soak benchmark: `npm run bench:soak`. This file runs it (settings, the order of things,
// clean-up); beside it: server.ts (the server under test), streams.ts (streams and publishers),
// readers.ts (HLS readers, stalls, drops), apiLoad.ts, webhooks.ts (event checks), resources.ts
// (/proc sampling), and report*.ts (the tables and the PASS/MISS targets).
//
// A real onair server in its own process (`node --import tsx src/main.ts`, as `npm start` runs it,
// on a throwaway DATA_DIR and free ports) under a steady load for SOAK_MINUTES, for what only
// shows over time:
//   - SOAK_PUBLISHERS RTMP publishers, each live on its own stream for the whole run: ffmpeg
//     pushing a pre-encoded clip in a loop (`-re -stream_loop -1 -c copy`), which costs the
//     pusher almost nothing;
//   - SOAK_READERS HLS readers spread evenly over the streams, each doing what a player does: the
//     master playlist once, then its media playlist every half target duration and every new
//     segment, read to the end;
//   - SOAK_API_RATE API requests a second, open loop (each at its own time, whether or not the
//     previous ones have answered): GET /api/stream/{id}, GET /api/stream, GET /api/session in
//     9:5:5, and one PATCH /api/stream/{id} (a new name) in 20;
//   - a webhook receiver subscribed to every event, with a shared secret.
//
// What it reports, and the targets (PASS/MISS lines at the end):
//   - dropped segments (target 0): a listed segment a reader could not fetch (404, another status,
//     a network error), or one that left the playlist before the reader saw it (a media sequence
//     gap between two polls);
//   - stalls (target 0): no new segment for more than 3 target durations while the stream's
//     publisher was connected. A stream stall: no reader saw one (the server stopped producing);
//     a reader stall: this reader did not (it could also be slow answers to that reader);
//   - lost events (target 0): after the publishers stop, every session's stream.started has its
//     stream.idle, and no event arrived twice (same event id) or with a bad signature;
//   - memory (target flat): the server's RSS (/proc/<pid>/status VmRSS) every 10 s. Start is the
//     first sample after the warm-up (10 % of the run, at most 1 min: JIT, caches, SQLite pages),
//     growth is end minus start, slope the least-squares fit of every sample after the warm-up.
//     Also its open file descriptors (a leaked socket or file shows there first) and the
//     pipelines' RSS;
//   - ffmpeg restarts (target 0): onair_pipeline_restarts_total and onair_pipeline_failures_total
//     from /metrics, and publisher disconnects (a pusher that exited on its own: it is started
//     again after 1 s, as OBS reconnects, and its streams' stalls during the reconnect do not count);
//   - API latency p50/p99 under the load, next to the same request mix against the same server
//     before any media (SOAK_BASELINE_SECONDS, measured first in the same run: the machines are
//     small, noisy and shared, so the ratio is what compares across runs);
//   - the server's event loop delay, from a 10-line probe the bench preloads into the server
//     (`--import`; src/ is unchanged): it tells a blocked server from a busy machine;
//   - CPU from /proc: the server's Node process next to its ffmpeg pipelines, the pushers, this
//     bench, and "others" (processes outside the bench: a shared machine).
// The exit status is non-zero only when the bench itself broke (no server, the server died, a
// stream never went live), never for a missed target.
//
// Profiles: 2 cores cannot transcode five 720p ladders in real time (see bench:live). By default
// every stream has one small rendition, 240p at 15 fps and 300 kb/s, so the pipeline still
// decodes, scales and encodes (about 12 % of a core per stream here, against 2 % for a copy);
// SOAK_PROFILE=passthrough creates the streams with `profiles: []`, which the API serves as one
// copied `source` rendition. The source is 640x360@30 H.264 ultrafast 2.5 Mb/s with 1 s keyframes
// and AAC (bench/lib makeClip), a 20 s clip.
//
// The server runs with LOG_LEVEL=warn (its warnings and errors are tallied in the report),
// API_RATE_LIMIT=0 (the API load is not throttled), the embedded queue (REDIS_URL unset) and
// MAX_LIVE_STREAMS_PER_USER raised to SOAK_PUBLISHERS when that is above the default 10.
//
// Settings (environment): SOAK_MINUTES (10), SOAK_PUBLISHERS (5), SOAK_READERS (50),
// SOAK_API_RATE (20 requests/s), SOAK_BASELINE_SECONDS (15), SOAK_SEGMENT_SECONDS (1, the server's LL-HLS default),
// SOAK_PROFILE (240p15 or passthrough); FFMPEG_PATH as for the server. Quick run: SOAK_MINUTES=1.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { startReceiver, type Receiver } from "../../test/helpers/receiver";
import { fixed, makeClip, running } from "../lib";
import { startApiLoad } from "./apiLoad";
import { apiAgent, hlsAgent } from "./httpClient";
import { newReaderLog, newReaderStats, runReader, STALL_TARGET_DURATIONS, type ReaderStats } from "./readers";
import { report } from "./report";
import { childPids, takeSample, type Sample } from "./resources";
import type { Counters, SoakResult } from "./result";
import { now, pause, sleep, soakState } from "./runState";
import { apiJson, scrapeMetrics, startOnair, type Onair } from "./server";
import { CLIP, readSettings, SAMPLE_MS, SETTLE_MS, SMALL_RENDITION, type Settings } from "./settings";
import { createStreams, startPublisher, waitAllLive } from "./streams";
import { allSessionsMatched, judgeEvents, WEBHOOK_SECRET } from "./webhooks";

const WARMUP_FRACTION = 0.1;
const WARMUP_MAX_S = 60;
/** Not counted: JIT and connections of the API baseline. */
const BASELINE_WARMUP_S = 2;
/** After the publishers stop: every stream.idle, every isActive false. */
const IDLE_TIMEOUT_MS = 30_000;
const SERVER_STOP_GRACE_MS = 10_000;

let onairForCleanup: Onair | undefined;
let receiverForCleanup: Receiver | undefined;
const tempDirs: string[] = [];
let cleaning: Promise<void> | undefined;

/**
 * Stops everything this run started, by PID: the pushers (SIGINT, then SIGKILL), the server
 * (SIGTERM, which stops its pipelines, then SIGKILL), any pipeline the server left behind (only
 * a process whose command line names this run's data directory), then removes the temp dir.
 */
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    soakState.stopping = true;
    const o = onairForCleanup;
    const pipelines = o ? childPids(o.pid) : [];
    await Promise.all([...running].filter((c) => c !== o?.child).map((c) => c.stop(3000)));
    if (o) await o.child.stop(SERVER_STOP_GRACE_MS, "SIGTERM");
    for (const pid of pipelines) {
      try {
        if (o && fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(o.dataDir)) process.kill(pid, "SIGKILL");
      } catch {
        // gone, as it should be
      }
    }
    await receiverForCleanup?.close();
    apiAgent.destroy();
    hlsAgent.destroy();
    for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
  })();
  return cleaning;
}

async function runSoak(settings: Settings): Promise<SoakResult | undefined> {
  const runSeconds = settings.minutes * 60;
  const warmupSeconds = Math.min(WARMUP_MAX_S, Math.round(runSeconds * WARMUP_FRACTION));
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-soak-"));
  tempDirs.push(workDir);
  const dataDir = path.join(workDir, "data");
  fs.mkdirSync(dataDir);
  const loopLag = monitorEventLoopDelay({ resolution: 20 });
  loopLag.enable();

  process.stderr.write("starting the server\n");
  const o = await startOnair(workDir, dataDir, settings);
  onairForCleanup = o;
  const serverDied = () => (o.child.isRunning ? undefined : o.child.describeExit());

  process.stderr.write("making the 360p30 test clip\n");
  const clip = await makeClip(o.ffmpeg, workDir, CLIP);

  const receiver = await startReceiver(() => 204);
  receiverForCleanup = receiver;
  await apiJson(o, "POST", "/webhook", 200, { name: "soak", url: receiver.url, sharedSecret: WEBHOOK_SECRET });

  const profiles = settings.passthrough ? [] : [SMALL_RENDITION];
  const streams = await createStreams(o, settings.publishers, profiles);

  // Baseline: the same API mix against the same server, before any media.
  process.stderr.write(`API baseline: ${settings.apiRate} req/s for ${BASELINE_WARMUP_S} + ${settings.baselineSeconds} s, no media\n`);
  const baselineLoad = startApiLoad(o, streams, settings.apiRate);
  await pause(BASELINE_WARMUP_S * 1000);
  const baselineFrom = now();
  const baselineMetricsFrom = await scrapeMetrics(o);
  const baselineStart = takeSample(o, streams);
  await pause(settings.baselineSeconds * 1000);
  baselineLoad.stop();
  await baselineLoad.done;
  const baselineEnd = takeSample(o, streams);
  const baselineMetricsTo = await scrapeMetrics(o);
  if (soakState.stopping) return undefined;

  process.stderr.write(`${settings.publishers} publishers: until every stream is live\n`);
  for (const s of streams) startPublisher(o, s, clip);
  const liveAfterS = await waitAllLive(o, streams);
  const metricsLive = await scrapeMetrics(o);

  const runStart = now();
  const warmEnd = runStart + warmupSeconds * 1000;
  const runUntil = runStart + runSeconds * 1000;
  const stallMs = settings.segmentSeconds * 1000 * STALL_TARGET_DURATIONS;
  process.stderr.write(
    `soak: ${settings.minutes} min (warm-up ${warmupSeconds} s), ${settings.readers} readers, ${settings.apiRate} API req/s; ` +
      `every stream live after ${liveAfterS.toFixed(1)} s\n`,
  );
  const readerStats = streams.map(() => [] as ReaderStats[]);
  const readerLog = newReaderLog();
  const readers: Promise<void>[] = [];
  for (let r = 0; r < settings.readers; r++) {
    const s = streams[r % streams.length]!;
    const stats = newReaderStats();
    readerStats[s.index]!.push(stats);
    readers.push(runReader(o.baseUrl, s, stats, readerLog, stallMs));
  }
  const load = startApiLoad(o, streams, settings.apiRate);
  // The server's own request timings from the end of the warm-up, as the bench's are.
  const metricsWarm = pause(warmupSeconds * 1000).then(() => (soakState.stopping ? "" : scrapeMetrics(o).catch(() => "")));
  const samples: Sample[] = [takeSample(o, streams)];
  const countNow = (): Counters => {
    const all = readerStats.flat();
    return { at: now(), segments: all.reduce((a, x) => a + x.segments, 0), dropped: all.reduce((a, x) => a + x.segment404 + x.segmentErrors + x.seqGaps, 0) };
  };
  const counters = [countNow()];
  let broken: string | undefined;
  let lastProgress = now();
  while (!soakState.stopping && now() < runUntil) {
    await pause(Math.min(SAMPLE_MS, runUntil - now()));
    samples.push(takeSample(o, streams));
    counters.push(countNow());
    broken = serverDied();
    if (broken) break;
    if (now() - lastProgress >= 60_000) {
      lastProgress = now();
      const last = samples[samples.length - 1]!;
      const c = counters[counters.length - 1]!;
      process.stderr.write(
        `  ${((now() - runStart) / 60_000).toFixed(1)} min: server RSS ${fixed(last.rssMiB, 0)} MiB, ${last.fds} fds; ${c.segments} segments read, ` +
          `${c.dropped} dropped, ${readerLog.stallStarts.length} reader stalls; ${load.samples.length} API requests\n`,
      );
    }
  }
  const runEnd = now();
  const metricsEnd = broken ? "" : await scrapeMetrics(o).catch(() => "");

  // The end of the run: API load and readers first, then the publishers leave.
  load.stop();
  soakState.readersDone = true;
  await Promise.all([load.done, ...readers]);
  const warm = await metricsWarm;
  // The readers' keep-alive connections would count as the server's open descriptors.
  hlsAgent.destroy();
  if (cleaning) return undefined;

  process.stderr.write("publishers leave: waiting for every stream.idle\n");
  soakState.stopping = true; // no reconnects from here
  const stoppedAt = now();
  await Promise.all(streams.map((s) => s.publisher?.stop(3000)));
  const after: SoakResult["after"] = { seconds: 0, metrics: "" };
  try {
    if (!broken) await receiver.waitFor(() => allSessionsMatched(receiver), "stream.idle of every started session", IDLE_TIMEOUT_MS);
  } catch (err) {
    after.idleProblem = err instanceof Error ? err.message : String(err);
  }
  if (!broken && o.child.isRunning) {
    const deadline = now() + IDLE_TIMEOUT_MS;
    for (;;) {
      const states = await Promise.all(streams.map((s) => apiJson<{ isActive: boolean }>(o, "GET", `/stream/${s.id}`, 200)));
      after.stillActive = states.filter((x) => x.isActive).length;
      if (after.stillActive === 0 || now() > deadline) break;
      await sleep(500);
    }
    after.sessionsInApi = (await apiJson<unknown[]>(o, "GET", "/session?limit=1000", 200)).length;
    await sleep(Math.max(0, stoppedAt + SETTLE_MS - now()));
    after.settled = takeSample(o, streams);
    after.metrics = await scrapeMetrics(o).catch(() => "");
  }
  after.seconds = (now() - stoppedAt) / 1000;
  // Whether the server died by itself, before it is asked to stop.
  broken ??= serverDied();
  if (!broken) {
    const t = now();
    const exit = await o.child.stop(SERVER_STOP_GRACE_MS, "SIGTERM");
    after.shutdown = { exit, seconds: (now() - t) / 1000 };
  }
  const benchLag = { p99: loopLag.percentile(99) / 1e6, max: loopLag.max / 1e6 };
  loopLag.disable();
  return {
    settings,
    o,
    warmupSeconds,
    liveAfterS,
    runStart,
    warmEnd,
    runEnd,
    stallMs,
    streams,
    readerStats,
    readerLog,
    baseline: { load: baselineLoad, from: baselineFrom, start: baselineStart, end: baselineEnd, metricsFrom: baselineMetricsFrom, metricsTo: baselineMetricsTo },
    load,
    samples,
    counters,
    metrics: { live: metricsLive, warm, end: metricsEnd },
    after,
    events: judgeEvents(receiver),
    benchLag,
    broken,
  };
}

async function main(): Promise<void> {
  const settings = readSettings();
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.on(sig, () => {
      if (cleaning) {
        // A second signal: no more waiting.
        for (const c of running) c.signal("SIGKILL");
        process.exit(130);
      }
      process.stderr.write(`\n${sig}: stopping every process this bench started\n`);
      void cleanUp().then(() => process.exit(130));
    });
  }
  const result = await runSoak(settings);
  if (!result) return;
  process.stdout.write(report(result) + "\n");
  if (result.broken) throw new Error(result.broken);
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`bench:soak failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => cleanUp());
