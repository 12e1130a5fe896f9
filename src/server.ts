import fs from "node:fs";
import http from "node:http";
import express from "express";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createApp } from "./api";
import { publicUrl, rtmpPublicUrl, type Config } from "./config";
import { logCheckpoints, openStore, type Store } from "./db";
import { lockDataDir } from "./instanceLock";
import { startEvents, type EventSink, type RunningEvents } from "./events";
import type { Logger } from "./log";
import { closeGracefully, createPublicServer, dashboardRouter, hlsRouter, operatorGate, playerRouter, recordingsRouter } from "./http";
import { INGEST_APP, RtmpIngest } from "./ingest";
import { LiveHls } from "./hls";
import { ffmpegHasCmaf, locateFfmpeg, ProcessRegistry, reapLeftovers, type FfmpegLocation } from "./media";
import { MultistreamManager } from "./multistream";
import { OutboundPolicy } from "./outbound";
import { cachedReadiness, livenessRouter, probeDatabaseWritable, probeFfmpeg, readinessRouter, StorageWatch, STORAGE_RESERVE_BYTES } from "./health";
import { bullmqQueueDepth, createMetrics, metricsRouter, waitingJobsByQueue, type Metrics, type QueueDepthReader } from "./metrics";
import { expectedFinalizeJobs, finalizeJob, FINALIZE_QUEUE, Recorder, RecordingFinalizer, RecordingUrlSigner, startRetention, type FinalizeJob } from "./recordings";
import { SessionManager } from "./sessions";
import { EVENT_FANOUT_QUEUE, startWebhookHistoryRetention, WEBHOOK_DELIVERY_QUEUE } from "./webhooks";

/** Where the first start keeps the first API key, readable by the operator only (0600). */
export const FIRST_KEY_FILE = "first-api-key";

export interface RunningServer {
  store: Store;
  port: number;
  publicUrl: string;
  apiUrl: string;
  rtmpUrl: string;
  /** The RTMP port actually bound (RTMP_PORT=0 picks one). */
  rtmpPort: number;
  /** The operator's listener (/metrics, /readyz, /healthz), as bound. */
  adminPort: number;
  /** e.g. http://127.0.0.1:8090 */
  adminUrl: string;
  ffmpeg: FfmpegLocation | undefined;
  sessions: SessionManager;
  /** Where domain events are raised (durable; each becomes webhook deliveries). */
  events: EventSink;
  /** Every process the server has running (ffmpeg). */
  processes: ProcessRegistry;
  /** What GET /metrics exposes (this server's own Prometheus registry). */
  metrics: Metrics;
  /** Set when this start created the first user (empty data directory). */
  firstUser?: { name: string; apiKey: string };
  stop(): Promise<void>;
}

export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  const lock = lockDataDir(config.dataDir);
  const ffmpeg = locateFfmpeg(config.ffmpegPath);
  let store: Store;
  try {
    store = openStore(config.dbPath, { checkpointInBackground: (p) => logCheckpoints(log, p) });
  } catch (err) {
    lock.release();
    throw err;
  }

  let firstUser: RunningServer["firstUser"];
  if (store.users.count() === 0) {
    const user = store.users.getOrCreate("admin");
    firstUser = { name: user.name, apiKey: store.apiKeys.create(user.id) };
    // Also kept where only the operator can read it: the banner scrolls away, a log collector
    // keeps it for anyone who reads logs. Never written to the log itself.
    const keyFile = path.join(config.dataDir, FIRST_KEY_FILE);
    fs.writeFileSync(keyFile, firstUser.apiKey + "\n", { mode: 0o600 });
    log.info({ userId: user.id, keyFile }, "empty data directory: created the first user and API key");
  }

  // Recording URLs are signed with a secret of this data directory (made at the first start).
  let recordingSigner: RecordingUrlSigner;
  try {
    recordingSigner = RecordingUrlSigner.open(config.dataDir);
  } catch (err) {
    store.close();
    lock.release();
    throw err;
  }
  const signRecording = (sessionId: string) => recordingSigner.sign(sessionId);

  let resolvedPublicUrl = config.publicUrlSetting ?? "";

  // --- metrics: read at scrape time from the parts below, which exist by the first request ---
  const queueNames = [EVENT_FANOUT_QUEUE, WEBHOOK_DELIVERY_QUEUE, FINALIZE_QUEUE];
  const queueDepth: QueueDepthReader | undefined = config.redisUrl
    ? bullmqQueueDepth(store.db, config.redisUrl, config.redisPrefix, queueNames)
    : undefined;
  const metrics = createMetrics({
    ffmpegProcesses: () => processes.size,
    queueDepths: () => queueDepth?.depths() ?? waitingJobsByQueue(store.db, queueNames),
    publisherBytes: (publisherId) => ingest?.bytesRead(publisherId),
    streamIssues: () => sessions.runtimes().filter((r) => !r.isEnding).map((r) => r.health().kinds),
  });
  // --- end of metrics ---

  // One outbound policy for every connection a user's input makes: webhook deliveries,
  // multistream pushes, and the API's checks of their urls.
  const outbound = new OutboundPolicy(config.outbound);

  // --- events → webhook deliveries (src/events, src/queue, src/webhooks) ---
  // raise() writes the event, its deliveries and their jobs in one SQLite transaction (with
  // REDIS_URL, the jobs then go on to BullMQ), and wakes this process's delivery workers.
  let running: RunningEvents;
  try {
    running = await startEvents(config, store, log, { metrics, policy: outbound });
  } catch (err) {
    store.close();
    lock.release();
    throw err;
  }
  const events: EventSink = running.events;
  const stopEvents = () => running.stop();
  // --- end of events ---

  // ffmpeg left running by a previous run that died (SIGKILL, a power cut) is killed first.
  const processesDir = path.join(config.dataDir, "processes");
  reapLeftovers(processesDir, (pid) => log.warn({ pid }, "killed an ffmpeg left running by a previous run"));
  const processes = new ProcessRegistry(processesDir);

  // --- recordings: segments of recorded sessions kept, finalized by a queue job ---
  const recordingsDir = path.join(config.dataDir, "recordings");
  const recorder = new Recorder({
    store,
    events,
    recordingsDir,
    enqueueFinalize: (sessionId) => running.queue.enqueue<FinalizeJob>(FINALIZE_QUEUE, finalizeJob(sessionId)),
  });
  // With Redis, a finalize job it lost is added again while the recording still waits.
  running.queue.expect(FINALIZE_QUEUE, () => expectedFinalizeJobs(store, 1_000));
  const stopRecordingRetention = startRetention(store, recordingsDir, config.recordingsRetentionDays, log);
  const stopHistoryRetention = startWebhookHistoryRetention(store, config.webhookLogRetentionDays, log);
  const stopRetention = () => {
    stopRecordingRetention();
    stopHistoryRetention();
  };
  // --- end of recordings ---

  // --- live media: RTMP ingest → session manager → one ffmpeg pipeline per session ---
  const hlsDir = path.join(config.dataDir, "hls");
  // Live sessions' packagers by playback id: the HLS routes answer live requests from them.
  const liveHls = new LiveHls();
  // A full or unwritable data directory ends live sessions with the reason and refuses new
  // publishes until it recovers; /readyz shows it meanwhile.
  const storage = new StorageWatch({
    dir: hlsDir,
    minFreeBytes: config.storageMinFreeBytes,
    reserve: { file: path.join(config.dataDir, "storage-reserve"), bytes: STORAGE_RESERVE_BYTES },
    log,
    onChange: (problem) => {
      if (problem === undefined) return log.info("storage available again: publishes are taken");
      log.error({ problem }, "storage unavailable: live sessions end, publishes are refused");
      void sessions.storageFailed(problem);
    },
  });

  // The pipeline pulls from the local RTMP server; a wildcard bind is reached on loopback.
  const rtmpHost = ["0.0.0.0", "::", ""].includes(config.host) ? "127.0.0.1" : config.host;
  let ingest: RtmpIngest | undefined;
  let rtmpPort = config.rtmpPort;
  // Pushes to multistream targets while a session is live. Shutdown ends every session first,
  // which finishes their pushes; processes.stopAll below stops any still draining.
  const multistream = new MultistreamManager({ store, events, log, registry: processes, ffmpegPath: ffmpeg?.path, policy: outbound });
  const sessions = new SessionManager({
    store,
    events,
    log,
    registry: processes,
    ffmpegPath: ffmpeg?.path,
    hlsDir,
    rtmpInputUrl: (alias) => `rtmp://${rtmpHost.includes(":") ? `[${rtmpHost}]` : rtmpHost}:${rtmpPort}/${INGEST_APP}/${alias}`,
    segmentSeconds: config.hlsSegmentSeconds,
    listSize: config.hlsListSize,
    lowLatency: config.hlsLowLatency,
    ffmpegCmaf: ffmpeg ? ffmpegHasCmaf(ffmpeg.path) : undefined,
    liveHls,
    disconnectPublisher: (id, refusal) => ingest?.disconnect(id, refusal),
    observers: [recorder, multistream],
    metrics,
    maxLiveStreamsPerUser: config.limits.maxLiveStreamsPerUser,
    transcodeBudget: config.transcodeBudget,
    reconnectWindowSeconds: config.reconnectWindowSeconds,
    storageProblem: () => storage.check(),
    publisherStats: (publisherId) => ingest?.publisherStats(publisherId),
  });
  // Sessions a crashed run left open: closed with their stream.idle, then the recordings of
  // every ended session not yet handed to finalize (recording.waiting after stream.idle, as at
  // a normal end); all or nothing.
  store.db.transaction(() => {
    sessions.recoverAfterCrash();
    recorder.recoverAfterCrash(store.sessions.listUnfinalizedRecordings());
  })();
  ingest = new RtmpIngest(sessions, log, {
    mediaTimeoutMs: config.publishMediaTimeoutMs,
    onReaderCut: () => metrics.readerCut(),
    onPublisherStalled: () => metrics.publisherStalled(),
  });
  try {
    rtmpPort = await ingest.listen(config.rtmpPort, config.host);
  } catch (err) {
    stopRetention();
    storage.stop();
    await stopEvents();
    store.close();
    lock.release();
    throw new Error(`cannot listen for RTMP on ${config.host}:${config.rtmpPort}: ${(err as Error).message}`);
  }
  // --- end of live media ---

  // /readyz and /metrics: on the operator's listener, and behind the gate on the public port.
  const readiness = cachedReadiness({
    database: () => probeDatabaseWritable(store.db),
    // The storage watch's last probe (every 2 s): a request never writes to the disk itself.
    storage: () => storage.current,
    ffmpeg: () => probeFfmpeg(ffmpeg?.path),
    rtmp: () => (ingest?.listening ? undefined : "the RTMP server is not listening"),
  });
  const operatorRouters = [readinessRouter(readiness), metricsRouter(metrics)];
  let adminAddress = `${config.adminHost}:${config.adminPort}`;
  const admin = http.createServer(express().disable("x-powered-by").use(livenessRouter(), ...operatorRouters));
  try {
    await new Promise<void>((resolve, reject) => {
      admin.once("error", reject);
      admin.listen(config.adminPort, config.adminHost, () => resolve());
    });
  } catch (err) {
    await ingest.close();
    stopRetention();
    storage.stop();
    await stopEvents();
    store.close();
    lock.release();
    throw new Error(`cannot listen for the operator (ADMIN_PORT) on ${adminAddress}: ${(err as Error).message}`);
  }
  const adminPort = (admin.address() as AddressInfo).port;
  adminAddress = `${config.adminHost.includes(":") ? `[${config.adminHost}]` : config.adminHost}:${adminPort}`;

  const app = createApp({ store, log, publicUrl: () => resolvedPublicUrl, signRecording, live: sessions, limits: config.limits, outbound }, [
    hlsRouter(store, hlsDir, liveHls),
    recordingsRouter(store, recordingsDir, recordingSigner),
    livenessRouter(),
    operatorGate(config.metricsToken, () => adminAddress),
    ...operatorRouters,
    playerRouter(store, signRecording),
    dashboardRouter(() => rtmpPublicUrl(config, rtmpPort)),
  ], metrics);
  const publicServer = createPublicServer(app, config.tls);
  const server = publicServer.server;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => resolve());
    });
  } catch (err) {
    admin.close();
    await ingest.close();
    stopRetention();
    storage.stop();
    await stopEvents();
    store.close();
    lock.release();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  resolvedPublicUrl = publicUrl(config, port);
  // Finalize only once PUBLIC_URL is known: recording.ready carries the recording's URLs.
  const finalizer = new RecordingFinalizer({
    store,
    events,
    log,
    registry: processes,
    ffmpegPath: ffmpeg?.path,
    recordingsDir,
    links: () => ({ publicUrl: resolvedPublicUrl, sign: signRecording }),
    minFreeBytes: config.storageMinFreeBytes,
    stallMs: config.finalizeStallMs,
  });
  const finalizeWorker = running.queue.process<FinalizeJob>(FINALIZE_QUEUE, finalizer.handle, { concurrency: 1 });

  let stopped: Promise<void> | undefined;
  return {
    store,
    port,
    publicUrl: resolvedPublicUrl,
    apiUrl: `${resolvedPublicUrl}/api`,
    rtmpUrl: rtmpPublicUrl(config, rtmpPort),
    rtmpPort,
    adminPort,
    adminUrl: `http://${adminAddress}`,
    ffmpeg,
    sessions,
    events,
    processes,
    metrics,
    firstUser,
    stop: () =>
      (stopped ??= (async () => {
        // Finalize first: no job is taken from here on (ending the live sessions below enqueues
        // theirs, for the next start), and a remux running is stopped with its job released to
        // run again after the restart, this attempt not counted.
        const finalizeStopped = finalizeWorker.close();
        finalizer.interrupt();
        await finalizeStopped;
        // Live sessions next: publishers disconnected, playlists ended, isActive false and
        // stream.idle raised while the event sink still takes events.
        await sessions.shutdown();
        await ingest.close();
        await processes.stopAll(2000);
        // Then HTTP and webhook delivery side by side, each with its own bound (3 s), so that
        // the whole stop stays well inside the 10 s a supervisor gives before SIGKILL.
        const httpClosed = Promise.all([publicServer.close(3_000), closeGracefully(admin, 3_000)]);
        stopRetention();
        storage.stop();
        await Promise.all([httpClosed, stopEvents()]);
        await queueDepth?.close();
        store.close();
        lock.release();
      })()),
  };
}

export function banner(s: RunningServer, dataDir: string): string {
  const lines = [
    "onair is running",
    `  API:          ${s.apiUrl}   (reference: ${s.publicUrl}/api/docs)`,
    `  RTMP ingest:  ${s.rtmpUrl}/<streamKey>`,
    `  HLS playback: ${s.publicUrl}/hls/<playbackId>/index.m3u8`,
    `  operator:     ${s.adminUrl}/metrics and /readyz   (ADMIN_PORT; loopback only by default)`,
    `  data:         ${dataDir}`,
    `  ffmpeg:       ${s.ffmpeg ? `${s.ffmpeg.path} (from ${s.ffmpeg.source})` : "not found: install ffmpeg or set FFMPEG_PATH"}`,
  ];
  if (s.firstUser) {
    lines.push(
      "",
      `  First start: created user "${s.firstUser.name}" with this API key (shown once; keep it):`,
      `  API key:      ${s.firstUser.apiKey}   (also in ${path.join(dataDir, FIRST_KEY_FILE)}, mode 0600)`,
      `  More keys:    npm run -s cli -- keys create <user>   (keys list, keys revoke <id>)`,
    );
  }
  return lines.join("\n");
}
