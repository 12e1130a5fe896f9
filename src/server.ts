import fs from "node:fs";
import http from "node:http";
import type net from "node:net";
import os from "node:os";
import express from "express";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createApp, RedisRateLimiter, type ApiDeps } from "./api";
import { CLIP_QUEUE, clipJob, ClipMaker, ClipService, LiveClipBuffer, type ClipJob } from "./assets";
import { databaseLocation, publicUrl, rtmpPublicUrl, type Config, type Role } from "./config";
import { lockKey, logCheckpoints, openStore, type Store } from "./db";
import { lockDataDir, type InstanceLock } from "./instanceLock";
import { startEvents, type EventSink, type RunningEvents } from "./events";
import type { Logger } from "./log";
import { broadcastRouter, closeGracefully, createPublicServer, dashboardRouter, hlsRouter, assetsRouter, operatorGate, playerRouter, recordingsRouter, whipRouter } from "./http";
import { BridgeTickets, iceServerLinks, INGEST_APP, PullIngest, RtmpIngest, SrtIngest, WhipIngest } from "./ingest";
import { LiveHls } from "./hls";
import { AUDIO_BITRATE, ffmpegHasCmaf, locateFfmpeg, ProcessRegistry, reapLeftovers, type FfmpegLocation } from "./media";
import { failuresAfter, MultistreamManager, retryDelayMs } from "./multistream";
import { OutboundPolicy } from "./outbound";
import { cachedReadiness, livenessRouter, probeDatabaseWritable, probeFfmpeg, readinessRouter, StorageWatch, STORAGE_RESERVE_BYTES } from "./health";
import { bullmqQueueDepth, createMetrics, metricsRouter, waitingJobsByQueue, type Metrics, type QueueDepthReader } from "./metrics";
import { expectedFinalizeJobs, finalizeJob, FINALIZE_QUEUE, Recorder, RecordingFinalizer, RecordingUrlSigner, startRetention, type FinalizeJob } from "./recordings";
import { SessionManager, StreamKeyIndex, type OrphanDeps } from "./sessions";
import { LocalRecordingStore, S3RecordingStore, s3Client, type RecordingStore } from "./storage";
import { ClusterNode, remoteLiveNode, sendNotice } from "./cluster";
import { freshViewerRowsMs, PlaybackGate, playbackSubjects, startViewerCountFlush, ViewerCounter, webhookQuestion } from "./playback";
import { EVENT_FANOUT_QUEUE, startWebhookHistoryRetention, WEBHOOK_DELIVERY_QUEUE, WebhookSender } from "./webhooks";

/** A `webhook` playback policy's webhook answers within this long, or the viewer is refused. */
const POLICY_WEBHOOK_TIMEOUT_MS = 5000;

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
  /** This process in the nodes table (NODE_ID). */
  nodeId: string;
  ffmpeg: FfmpegLocation | undefined;
  sessions: SessionManager;
  /** Where domain events are raised (durable; each becomes webhook deliveries). */
  events: EventSink;
  /** Every process the server has running (ffmpeg). */
  processes: ProcessRegistry;
  /** The pulls of streams with a pull source (an ingest node). */
  pulls: PullIngest | undefined;
  /** What GET /metrics exposes (this server's own Prometheus registry). */
  metrics: Metrics;
  /** Concurrent viewers of the streams this node packages (fed by the HLS routes; written to viewer_counts every heartbeat). */
  viewers: ViewerCounter;
  /** Set when this start created the first user (empty data directory). */
  firstUser?: { name: string; apiKey: string };
  stop(): Promise<void>;
}

export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  const lock = lockDataDir(config.dataDir);
  // What has started so far, undone in reverse order if a later step fails.
  const undo: (() => unknown)[] = [() => lock.release()];
  try {
    return await start(config, log, lock, undo);
  } catch (err) {
    for (const u of undo.reverse()) await u();
    throw err;
  }
}

async function start(config: Config, log: Logger, lock: InstanceLock, undo: (() => unknown)[]): Promise<RunningServer> {
  const has = (role: Role) => config.roles.includes(role);
  const ffmpeg = locateFfmpeg(config.ffmpegPath);
  const store = await openStore(databaseLocation(config), { checkpointInBackground: (p) => logCheckpoints(log, p) });
  undo.push(() => store.close());

  let firstUser: RunningServer["firstUser"];
  if ((await store.users.count()) === 0) {
    const user = await store.users.getOrCreate("admin");
    firstUser = { name: user.name, apiKey: await store.apiKeys.create(user.id) };
    // Also kept where only the operator can read it: the banner scrolls away, a log collector
    // keeps it for anyone who reads logs. Never written to the log itself.
    const keyFile = path.join(config.dataDir, FIRST_KEY_FILE);
    fs.writeFileSync(keyFile, firstUser.apiKey + "\n", { mode: 0o600 });
    log.info({ userId: user.id, keyFile }, "empty data directory: created the first user and API key");
  }

  // Recording URLs are signed with a secret of this data directory (made at the first start),
  // or of the database that several nodes share.
  const recordingSigner = store.db.dialect === "postgres" ? await RecordingUrlSigner.shared(store.db) : RecordingUrlSigner.open(config.dataDir);
  const signRecording = (sessionId: string) => recordingSigner.sign(sessionId);

  let resolvedPublicUrl = config.publicUrlSetting ?? "";

  // --- metrics: read at scrape time from the parts below, which exist by the first request ---
  const queueNames = [EVENT_FANOUT_QUEUE, WEBHOOK_DELIVERY_QUEUE, FINALIZE_QUEUE, CLIP_QUEUE];
  const queueDepth: QueueDepthReader | undefined = config.redisUrl
    ? bullmqQueueDepth(store.db, config.redisUrl, config.redisPrefix, queueNames)
    : undefined;
  const metrics = createMetrics({
    ffmpegProcesses: () => processes.size,
    queueDepths: () => queueDepth?.depths() ?? waitingJobsByQueue(store.db, queueNames),
    publisherBytes: (publisherId) => ingest?.bytesRead(publisherId),
    streamIssues: () => sessions.runtimes().filter((r) => !r.isEnding).map((r) => r.health().kinds),
    viewers: () => viewerSeries(viewers.counts(), sessions.runtimes().filter((r) => !r.isEnding).map((r) => r.stream.playbackId)),
  });
  // --- end of metrics ---

  // One outbound policy for every connection a user's input makes: webhook deliveries,
  // multistream pushes, and the API's checks of their urls.
  const outbound = new OutboundPolicy(config.outbound);

  // --- events → webhook deliveries (src/events, src/queue, src/webhooks) ---
  // raise() writes the event, its deliveries and their jobs in one transaction (with REDIS_URL,
  // the jobs then go on to BullMQ), and wakes this process's delivery workers. Deliveries and
  // fan-outs run on worker nodes only; the others enqueue them.
  const eventsConfig = has("worker") ? config : { ...config, webhooks: { ...config.webhooks, concurrency: 0 } };
  const running: RunningEvents = await startEvents(eventsConfig, store, log, { metrics, policy: outbound });
  undo.push(() => running.stop());
  const events: EventSink = running.events;
  // --- end of events ---

  // ffmpeg left running by a previous run that died (SIGKILL, a power cut) is killed first.
  const processesDir = path.join(config.dataDir, "processes");
  reapLeftovers(processesDir, (pid) => log.warn({ pid }, "killed an ffmpeg left running by a previous run"));
  const processes = new ProcessRegistry(processesDir);

  // --- recordings: segments of recorded sessions kept, finalized by a queue job ---
  const recordingsDir = path.join(config.dataDir, "recordings");
  // With S3_ENDPOINT/S3_BUCKET, recordings go to the bucket too, where every node finds them.
  const objects: RecordingStore = config.s3
    ? new S3RecordingStore(s3Client(config.s3), config.s3.bucket, (id) => path.join(recordingsDir, id), log, (ms) => metrics.recordingUpload(ms))
    : new LocalRecordingStore();
  const recorder = new Recorder({
    store,
    events,
    objects,
    recordingsDir,
    enqueueFinalize: (sessionId, within) => running.queue.enqueue<FinalizeJob>(FINALIZE_QUEUE, finalizeJob(sessionId), within),
  });
  // With Redis, a finalize job it lost is added again while the recording still waits.
  running.queue.expect(FINALIZE_QUEUE, () => expectedFinalizeJobs(store, 1_000));
  const stopRecordingRetention = startRetention(store, recordingsDir, config.recordingsRetentionDays, log, objects);
  const stopHistoryRetention = startWebhookHistoryRetention(store, config.webhookLogRetentionDays, log);
  const stopRetention = () => {
    stopRecordingRetention();
    stopHistoryRetention();
  };
  undo.push(stopRetention);
  // --- end of recordings ---

  // --- live media: RTMP ingest → session manager → one ffmpeg pipeline per session ---
  const hlsDir = path.join(config.dataDir, "hls");
  // Live sessions' packagers by playback id: the HLS routes answer live requests from them.
  const liveHls = new LiveHls();

  // --- clips (src/assets): assets cut from a live window or a recording by a queue job ---
  const assetsDir = path.join(config.dataDir, "assets");
  const assetObjects: RecordingStore = config.s3
    ? new S3RecordingStore(s3Client(config.s3), config.s3.bucket, (id) => path.join(assetsDir, id), log, undefined, (id) => `assets/${id}/`)
    : new LocalRecordingStore();
  // Each live session's source segments kept CLIP_WINDOW_SECONDS for clips (hard links).
  const clipBuffer = new LiveClipBuffer(path.join(assetsDir, "live"), config.clipWindowSeconds);
  clipBuffer.reset();
  const clipPaths = { hlsDir, recordingsDir, recordings: objects, liveBufferDir: clipBuffer.dir };
  const clips = new ClipService({
    ...clipPaths,
    store,
    assetsDir,
    assetObjects,
    publicUrl: () => resolvedPublicUrl,
    maxClipSeconds: config.maxClipSeconds,
    enqueue: (job, within) => running.queue.enqueue<ClipJob>(CLIP_QUEUE, job, within),
  });
  running.queue.expect(CLIP_QUEUE, async () => (await clips.assets.listUnfinished(1_000)).map(clipJob));
  // --- end of clips ---
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
  undo.push(() => storage.stop());

  // The pipeline pulls from the local RTMP server; a wildcard bind is reached on loopback.
  const rtmpHost = ["0.0.0.0", "::", ""].includes(config.host) ? "127.0.0.1" : config.host;
  let ingest: RtmpIngest | undefined;
  let whip: WhipIngest | undefined;
  let srt: SrtIngest | undefined;
  let pulls: PullIngest | undefined;
  let rtmpPort = config.rtmpPort;
  const rtmpLocalUrl = (name: string) => `rtmp://${rtmpHost.includes(":") ? `[${rtmpHost}]` : rtmpHost}:${rtmpPort}/${INGEST_APP}/${name}`;
  // WebRTC and SRT publishers come in through local bridges publishing under these tickets.
  const bridges = new BridgeTickets();
  // Pushes to multistream targets while a session is live. Shutdown ends every session first,
  // which finishes their pushes; processes.stopAll below stops any still draining.
  const multistream = new MultistreamManager({ store, events, log, registry: processes, ffmpegPath: ffmpeg?.path, policy: outbound });
  const keys = new StreamKeyIndex(store, log);
  // Sessions whose process is gone (a crash here, another node's death) end through this.
  const orphans: OrphanDeps = { store, events, log, handOffRecording: (tx, streamId, sessionId) => recorder.handOff(tx, streamId, sessionId) };
  const sessions = new SessionManager({
    keys,
    nodeId: config.nodeId,
    leaseMs: config.leaseMs,
    orphans,
    broadcast: sendNotice,
    store,
    events,
    log,
    registry: processes,
    ffmpegPath: ffmpeg?.path,
    hlsDir,
    rtmpInputUrl: rtmpLocalUrl,
    segmentSeconds: config.hlsSegmentSeconds,
    listSize: config.hlsListSize,
    lowLatency: config.hlsLowLatency,
    ffmpegCmaf: ffmpeg ? ffmpegHasCmaf(ffmpeg.path) : undefined,
    liveHls,
    disconnectPublisher: (id, refusal) => ingest?.disconnect(id, refusal),
    observers: [recorder, multistream, clipBuffer],
    metrics,
    maxLiveStreamsPerUser: config.limits.maxLiveStreamsPerUser,
    transcodeBudget: config.transcodeBudget,
    reconnectWindowSeconds: config.reconnectWindowSeconds,
    storageProblem: () => storage.check(),
    publisherStats: (publisherId) => ingest?.publisherStats(publisherId),
  });
  // Sessions a crashed run left open: closed with their stream.idle and their recordings handed
  // to finalize; then the recordings of every ended session not yet handed to finalize.
  await sessions.recoverAfterCrash(store.db.dialect === "sqlite");
  await recorder.recoverAfterCrash(await store.sessions.listUnfinalizedRecordings());
  // This process as a node: its heartbeat (and its streams' leases), the janitor, and on an
  // ingest node the notices of other nodes. Its internal URL is known once HTTP listens.
  const node = { id: config.nodeId, roles: [...config.roles], internalUrl: config.internalUrlSetting ?? null, startedAt: Date.now() };
  const cluster = new ClusterNode({
    store,
    log,
    node,
    heartbeatMs: config.heartbeatMs,
    leaseMs: config.leaseMs,
    controlPollMs: config.controlPollMs,
    orphans,
    sessions: has("ingest") ? sessions : undefined,
    databaseUrl: config.databaseUrl,
  });
  await cluster.start();
  undo.push(() => cluster.stop(true));
  if (has("ingest")) {
    // Admission reads keys from memory: loaded before the RTMP port opens.
    await keys.start();
    undo.push(() => keys.stop());
    const rtmp = new RtmpIngest(sessions, log, {
      mediaTimeoutMs: config.publishMediaTimeoutMs,
      onReaderCut: () => metrics.readerCut(),
      onPublisherStalled: () => metrics.publisherStalled(),
      bridges,
    });
    try {
      rtmpPort = await rtmp.listen(config.rtmpPort, config.host);
    } catch (err) {
      throw new Error(`cannot listen for RTMP on ${config.host}:${config.rtmpPort}: ${(err as Error).message}`);
    }
    ingest = rtmp;
    undo.push(() => rtmp.close());
    const { webrtc } = config;
    whip = new WhipIngest({
      check: (key, holder) => sessions.checkPublish(key, holder),
      release: (holder) => sessions.releaseHold(holder),
      tickets: bridges,
      registry: processes,
      ffmpegPath: ffmpeg?.path,
      workDir: path.join(config.dataDir, "webrtc"),
      rtmpUrl: rtmpLocalUrl,
      log: log.child({ ingest: "webrtc" }),
      settings: {
        rtc: {
          iceServers: [],
          ...(webrtc.bindAddress ? { bindAddress: webrtc.bindAddress } : {}),
          ...(webrtc.udpPorts ? { portRangeBegin: webrtc.udpPorts.first, portRangeEnd: webrtc.udpPorts.last } : {}),
        },
        publicIp: webrtc.publicIp,
        mediaTimeoutMs: webrtc.mediaTimeoutMs,
      },
    });
    const whipIngest = whip;
    undo.push(() => whipIngest.close());
    if (config.srt) {
      const { ports } = config.srt;
      const srtIngest = (srt = new SrtIngest({
        streams: () => keys.all(),
        assignPort: async (streamId) => {
          await store.transaction(async (tx) => {
            await lockKey(tx.db, "srt-ports");
            await tx.streams.assignSrtPort(streamId, ports);
          });
          await keys.refresh(streamId);
        },
        tickets: bridges,
        registry: processes,
        ffmpegPath: ffmpeg?.path,
        bindHost: config.host,
        latencyMs: config.srt.latencyMs,
        rtmpUrl: rtmpLocalUrl,
        log: log.child({ ingest: "srt" }),
      }));
      srtIngest.start();
      undo.push(() => srtIngest.close());
    }
    // Streams with a pull source: ffmpeg reads the source and publishes it here under a ticket.
    // Every ingest node reconciles them; the stream's lease lets one node run the session.
    const pullIngest = (pulls = new PullIngest({
      streams: () => keys.all(),
      tickets: bridges,
      registry: processes,
      ffmpegPath: ffmpeg?.path,
      rtmpUrl: rtmpLocalUrl,
      checkHost: (host) => outbound.check(host),
      liveElsewhere: async (streamId) => {
        const holder = await store.nodes.holder(streamId, Date.now());
        return holder !== undefined && holder !== config.nodeId ? holder : undefined;
      },
      backoff: { delayMs: (n) => retryDelayMs(n), failuresAfter: (n, ranForMs) => failuresAfter(n, ranForMs) },
      audioBitrate: AUDIO_BITRATE,
      log: log.child({ ingest: "pull" }),
    }));
    pullIngest.start();
    undo.push(() => pullIngest.close());
  }
  // --- end of live media ---

  // /readyz and /metrics: on the operator's listener, and behind the gate on the public port.
  const readiness = cachedReadiness({
    database: () => probeDatabaseWritable(store.db),
    // The storage watch's last probe (every 2 s): a request never writes to the disk itself.
    storage: () => storage.current,
    ffmpeg: () => probeFfmpeg(ffmpeg?.path),
    rtmp: () => (!has("ingest") || ingest?.listening ? undefined : "the RTMP server is not listening"),
  });
  const operatorRouters = [readinessRouter(readiness), metricsRouter(metrics)];
  let adminAddress = `${config.adminHost}:${config.adminPort}`;
  const admin = http.createServer(express().disable("x-powered-by").use(livenessRouter(), ...operatorRouters));
  try {
    await listen(admin, config.adminPort, config.adminHost);
  } catch (err) {
    throw new Error(`cannot listen for the operator (ADMIN_PORT) on ${adminAddress}: ${(err as Error).message}`);
  }
  undo.push(() => admin.close());
  const adminPort = (admin.address() as AddressInfo).port;
  adminAddress = `${config.adminHost.includes(":") ? `[${config.adminHost}]` : config.adminHost}:${adminPort}`;

  // WHIP on every node that takes publishes (an ingest-only node too); others answer 503.
  const whipRoutes = whipRouter({
    whip,
    iceLinks: iceServerLinks(config.webrtc.iceServers, config.webrtc.iceUsername, config.webrtc.iceCredential),
    publicIceLinks: iceServerLinks(config.webrtc.iceServers),
    streamState: (streamId) => {
      const live = sessions.liveSession(streamId);
      const health = sessions.health(streamId);
      return { isActive: live?.isLive ?? false, ...(health ? { isHealthy: health.isHealthy, issues: health.issues } : {}) };
    },
  });
  // Live HLS of a stream another node packages is passed to that node (several nodes only).
  // Who may watch (playback policies) and who does (viewers, counted from the players' tokens).
  const viewers = new ViewerCounter({ windowMs: config.viewerWindowMs });
  // Each node writes the counts of the streams it packages; the API sums the nodes' fresh rows.
  const viewerFlush = startViewerCountFlush({ counter: viewers, store, log, nodeId: config.nodeId, intervalMs: config.heartbeatMs, keep: (id) => liveHls.get(id) !== undefined });
  undo.push(() => viewerFlush.stop());
  const policySender = new WebhookSender({ timeoutMs: POLICY_WEBHOOK_TIMEOUT_MS, policy: outbound });
  undo.push(() => policySender.close());
  const gate = new PlaybackGate({
    key: recordingSigner.deriveKey("playback tokens"),
    findKey: (userId, pub) => store.signingKeys.enabledForUser(userId, pub),
    askWebhook: webhookQuestion(store, policySender, log),
    viewers,
    // Throttled by the gate's verdict cache: one write per key per few seconds at most.
    keyUsed: (keyId) => void store.signingKeys.markSeen(keyId, Date.now()).catch((err: unknown) => log.warn({ err, keyId }, "could not note a signing key's use")),
    tokenSeconds: config.playbackTokenSeconds,
  });
  const hls = hlsRouter(store, hlsDir, liveHls, { gate, subject: playbackSubjects(store) }, store.db.dialect === "postgres" ? remoteLiveNode(store, config.nodeId) : undefined);
  const pages = [
    hls,
    recordingsRouter(store, recordingsDir, recordingSigner, objects.kind === "s3" ? objects : undefined),
    assetsRouter(store, assetsDir, assetObjects.kind === "s3" ? assetObjects : undefined),
    livenessRouter(),
    operatorGate(config.metricsToken, () => adminAddress),
    ...operatorRouters,
    playerRouter(store, signRecording),
    dashboardRouter(() => rtmpPublicUrl(config, rtmpPort)),
    broadcastRouter(),
    whipRoutes,
  ];
  // With Redis, every API node counts the same bucket per key (a key behind N nodes must not get N times its rate).
  const rateRedis = config.redisUrl && has("api") ? sharedRateRedis(config.redisUrl) : undefined;
  if (rateRedis) undo.push(() => rateRedis.disconnect());
  const rateLimiter = rateRedis
    ? new RedisRateLimiter(rateRedis, { perSecond: config.limits.apiRatePerSecond, burst: config.limits.apiRateBurst }, config.redisPrefix, log)
    : undefined;
  // A node without the api role serves HLS only: other nodes pass their viewers' requests to it.
  const app = has("api")
    ? createApp({ store, log, publicUrl: () => resolvedPublicUrl, signRecording, live: sessions, limits: config.limits, outbound, rateLimiter, srt: srtUrls(config, () => rtmpPort), viewerCountsFreshMs: freshViewerRowsMs(config.heartbeatMs), clips }, pages, metrics)
    : express().disable("x-powered-by").use(hls, whipRoutes, livenessRouter());
  const publicServer = createPublicServer(app, config.tls);
  await listen(publicServer.server, config.port, config.host);
  undo.push(() => publicServer.close(1_000));
  const port = (publicServer.server.address() as AddressInfo).port;
  resolvedPublicUrl = publicUrl(config, port);
  node.internalUrl = config.internalUrlSetting ?? internalUrl(config, port);
  await cluster.beatNow();

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
    objects: objects.kind === "s3" ? objects : undefined,
  });
  const finalizeWorker = has("worker") ? running.queue.process<FinalizeJob>(FINALIZE_QUEUE, finalizer.handle, { concurrency: 1 }) : undefined;
  // Clips once PUBLIC_URL is known too: asset.ready carries the asset's URLs.
  const clipMaker = new ClipMaker({ ...clipPaths, store, events, log, registry: processes, ffmpegPath: ffmpeg?.path, assetsDir, objects: assetObjects, publicUrl: () => resolvedPublicUrl });
  const clipWorker = has("worker") ? running.queue.process<ClipJob>(CLIP_QUEUE, clipMaker.handle, { concurrency: 1 }) : undefined;

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
    nodeId: config.nodeId,
    ffmpeg,
    sessions,
    events,
    processes,
    pulls,
    metrics,
    viewers,
    firstUser,
    stop: () =>
      (stopped ??= (async () => {
        // Finalize first: no job is taken from here on (ending the live sessions below enqueues
        // theirs, for the next start), and a remux running is stopped with its job released to
        // run again after the restart, this attempt not counted.
        const finalizeStopped = finalizeWorker?.close();
        finalizer.interrupt();
        await finalizeStopped;
        // Clips likewise: an ffmpeg running is stopped, its job runs again after the restart.
        const clipsStopped = clipWorker?.close();
        clipMaker.interrupt();
        await clipsStopped;
        // WebRTC peers closed (their bridges' publishes end), then the live sessions.
        await whip?.close();
        await srt?.close();
        await pulls?.close();
        // Live sessions next: publishers disconnected, playlists ended, isActive false and
        // stream.idle raised while the event sink still takes events.
        await sessions.shutdown();
        await ingest?.close();
        await processes.stopAll(2000);
        // Its streams' leases given back: another node may take a reconnecting publisher at once.
        await cluster.stop(true);
        await viewerFlush.stop();
        // Then HTTP and webhook delivery side by side, each with its own bound (3 s), so that
        // the whole stop stays well inside the 10 s a supervisor gives before SIGKILL.
        const httpClosed = Promise.all([publicServer.close(3_000), closeGracefully(admin, 3_000)]);
        stopRetention();
        storage.stop();
        keys.stop();
        await Promise.all([httpClosed, running.stop()]);
        await queueDepth?.close();
        rateRedis?.disconnect();
        policySender.close();
        await store.close();
        lock.release();
      })()),
  };
}

/** The onair_viewers series: one per playback id live here, so the series end with their streams. */
function viewerSeries(counts: Map<string, number>, livePlaybackIds: (string | null)[]): Map<string, number> {
  return new Map(livePlaybackIds.filter((id) => id !== null).map((id) => [id, counts.get(id) ?? 0]));
}

/** SRT_PORTS set: the ports streams get and the URL callers use (SRT_PUBLIC_HOST, else RTMP_PUBLIC_URL's or PUBLIC_URL's host). */
function srtUrls(config: Config, rtmpPort: () => number): ApiDeps["srt"] {
  const { srt } = config;
  if (!srt) return undefined;
  return {
    ports: srt.ports,
    url: (port, passphrase) => {
      const host = srt.publicHost ?? new URL(config.rtmpPublicUrlSetting ?? config.publicUrlSetting ?? rtmpPublicUrl(config, rtmpPort())).hostname;
      return `srt://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}?passphrase=${encodeURIComponent(passphrase)}&latency=${srt.latencyMs * 1000}`;
    },
  };
}

/** The rate limit's own connection: no offline queue and a short timeout, so a Redis outage fails over to the local bucket at once. */
function sharedRateRedis(url: string): import("ioredis").Redis {
  // Loaded only with REDIS_URL, as the queue adapter is (about 170 ms).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Redis } = require("ioredis") as typeof import("ioredis");
  const redis = new Redis(url, { enableOfflineQueue: false, commandTimeout: 500, maxRetriesPerRequest: 1, retryStrategy: (n) => Math.min(n * 200, 2_000) });
  redis.on("error", () => undefined); // the limiter says when it falls back
  return redis;
}

function listen(server: net.Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
}

/** Where other nodes reach this one: HOST as bound, or this machine's name when HOST is a wildcard. */
function internalUrl(config: Config, port: number): string {
  const host = ["0.0.0.0", "::", ""].includes(config.host) ? os.hostname() : config.host;
  return `${config.tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${port}`;
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
