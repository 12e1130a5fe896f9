import { RealtimeFeeds } from "../realtime";
import { LiveStoryboard } from "../assets";
import path from "node:path";
import type { Writable } from "node:stream";
import { PublishRelays, sendNotice } from "../cluster";
import type { Config } from "../config";
import type { Store } from "../db";
import { MIN_FREE_BYTES, StorageWatch, STORAGE_RESERVE_BYTES } from "../health";
import { LiveHls, PART_SECONDS } from "../hls";
import { BridgeTickets, FlvPipeReader, INGEST_APP, Mp4PipeReader, type RtmpIngest } from "../ingest";
import { ffmpegHasCmaf, ffmpegHasLibopus, type SourceForm } from "../media";
import type { Metrics } from "../metrics";
import { MultistreamManager } from "../multistream";
import { DvrSpace, offsetClock, SessionManager, StreamKeyIndex, type DvrSession, type OrphanDeps } from "../sessions";
import type { ClipsArea } from "./clips";
import type { Wiring } from "./context";
import type { EventsArea } from "./events";
import type { MediaArea } from "./media";
import type { RecordingsArea } from "./recordings";

/** The local RTMP server as the rest of the server sees it: the bridges publish to it, pipelines and pushes read from its ingest. Its port and server are set once ingest listens. */
export class LocalRtmp {
  server: RtmpIngest | undefined;
  port: number;
  /** The RTMPS port bound, when TLS_CERT and TLS_KEY are set. */
  tlsPort: number | undefined = undefined;
  /** A wildcard bind is reached on loopback. */
  private readonly host: string;

  constructor(config: Config) {
    this.port = config.rtmpPort;
    const host = ["0.0.0.0", "::", ""].includes(config.host) ? "127.0.0.1" : config.host;
    this.host = host.includes(":") ? `[${host}]` : host;
  }

  url(name: string): string {
    return `rtmp://${this.host}:${this.port}/${INGEST_APP}/${name}`;
  }

  /** The stream under an internal name into a reader's stdin (a pipeline, a source push); with no ingest here, nothing comes (the pipe ends). */
  read(name: string, into: Writable, format: SourceForm, track?: number): () => void {
    const reader = format === "flv" ? new FlvPipeReader(into, track) : new Mp4PipeReader(into, format === "parts" ? { partSeconds: PART_SECONDS, ...(track ? { track } : {}) } : {});
    if (!this.server) {
      reader.endPlay();
      return () => undefined;
    }
    const stop = this.server.read(name, reader);
    // Parts are held until the frame after them: a run stopped by its session writes its last one.
    return format === "parts"
      ? () => {
          stop();
          reader.endPlay();
        }
      : stop;
  }
}

export interface SessionsArea {
  sessions: SessionManager;
  keys: StreamKeyIndex;
  orphans: OrphanDeps;
  /** Live sessions' packagers by playback id: the HLS routes answer live requests from them. */
  liveHls: LiveHls;
  hlsDir: string;
  storage: StorageWatch;
  rtmp: LocalRtmp;
  /** WebRTC, SRT and pull publishers come in through local bridges publishing under these tickets. */
  bridges: BridgeTickets;
  /** Live sessions' frames by playback id, for WebRTC playback; undefined when it is off. */
  realtime: RealtimeFeeds | undefined;
  /** DVR streams' seek previews, kept by the sessions this node packages. */
  storyboard: LiveStoryboard;
}

/** Live media: a publish → the session manager → one ffmpeg pipeline per session, and what watches them (storage, multistream, recordings, clips). */
export async function wireSessions(
  { config, log, stops }: Wiring,
  store: Store,
  { events, outbound }: EventsArea,
  { processes, ffmpeg }: MediaArea,
  { recorder }: RecordingsArea,
  { clipBuffer }: ClipsArea,
  metrics: Metrics,
  hlsDir: string,
): Promise<SessionsArea> {
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
  stops.register("drain", "storage watch", () => storage.stop());
  const liveHls = new LiveHls();
  const storyboard = new LiveStoryboard({ hlsDir, registry: processes, ffmpegPath: ffmpeg?.path });
  const realtime = config.webrtc.playback ? new RealtimeFeeds(log.child({ realtime: "feeds" })) : undefined;
  if (realtime) {
    const opus = ffmpeg ? ffmpegHasLibopus(ffmpeg.path) : false;
    if (ffmpeg && !opus) log.warn({ ffmpeg: ffmpeg.path }, "this ffmpeg has no libopus encoder: WebRTC viewers get video without audio (HLS keeps its audio)");
    await realtime.listen(opus);
    stops.register("release", "WebRTC playback feeds", () => realtime.close());
  }
  const rtmp = new LocalRtmp(config);
  const bridges = new BridgeTickets();
  // Pushes to multistream targets while a session is live. Shutdown ends every session first,
  // which finishes their pushes; the registry stops any still draining after.
  const multistream = new MultistreamManager({ store, events, log, registry: processes, ffmpegPath: ffmpeg?.path, policy: outbound, metrics: metrics.restarts });
  stops.register("release", "multistream pushes", () => multistream.settled());
  // DVR windows fitted to the disk (and ended ones deleted in time); it asks the manager below for its sessions.
  const dvrSpace = new DvrSpace({
    hlsDir,
    keepFreeBytes: Math.max(config.storageMinFreeBytes, MIN_FREE_BYTES) + STORAGE_RESERVE_BYTES,
    sessions: (): DvrSession[] => sessions.runtimes(),
    log,
  });
  stops.register("drain", "DVR storage watch", () => dvrSpace.stop());
  const keys = new StreamKeyIndex(store, log);
  // Sessions whose process is gone (a crash here, another node's death) end through this.
  const orphans: OrphanDeps = {
    store,
    events,
    log,
    recordingKept: (sessionId) => recorder.kept(sessionId),
    handOffRecording: (tx, streamId, sessionId, kept) => recorder.handOff(tx, streamId, sessionId, kept),
  };
  const relay = new PublishRelays({
    store,
    log,
    registry: processes,
    ffmpegPath: ffmpeg?.path,
    // FLV: the relay pushes what it reads as FLV to the session's node (H.264 publishes; see LiveSessionInfo.source).
    readSource: (name, into) => rtmp.read(name, into, "flv"),
    disconnectPublisher: (id, refusal) => rtmp.server?.disconnect(id, refusal),
  });
  const sessions = new SessionManager({
    keys,
    relay,
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
    readSource: (name, into, format, track) => rtmp.read(name, into, format, track),
    segmentSeconds: config.hlsSegmentSeconds,
    listSize: config.hlsListSize,
    lowLatency: config.hlsLowLatency,
    ffmpegCmaf: ffmpeg ? ffmpegHasCmaf(ffmpeg.path) : undefined,
    liveHls,
    ...(realtime ? { realtime } : {}),
    disconnectPublisher: (id, refusal) => rtmp.server?.disconnect(id, refusal),
    observers: [recorder, multistream, clipBuffer, storyboard, dvrSpace],
    metrics,
    maxLiveStreamsPerUser: config.limits.maxLiveStreamsPerUser,
    transcodeBudget: config.transcodeBudget,
    reconnectWindowSeconds: config.reconnectWindowSeconds,
    dvrWindowSeconds: config.dvrWindowSeconds,
    storageProblem: () => storage.check(),
    publisherStats: (publisherId) => rtmp.server?.publisherStats(publisherId),
    clock: offsetClock(config.clockOffsetMs),
  });
  // Publishers disconnected, playlists ended, isActive false and stream.idle raised while the
  // event sink still takes events.
  stops.register("sessions", "live sessions", () => sessions.shutdown());
  // Sessions a crashed run left open: closed with their stream.idle and their recordings handed
  // to finalize; then the recordings of every ended session not yet handed to finalize.
  await sessions.recoverAfterCrash(store.db.dialect === "sqlite");
  await recorder.recoverAfterCrash(await store.sessions.listUnfinalizedRecordings());
  return { sessions, keys, orphans, liveHls, hlsDir, storage, rtmp, bridges, realtime, storyboard };
}
