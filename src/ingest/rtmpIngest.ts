import net from "node:net";
import type { Logger } from "../log";
import { audioCodecOf, refuseAudio, refuseVideo, videoCodecOf } from "./mediaCheck";
import { PublishStats, type PublishStatsView } from "./publishStats";
import type { BridgeTickets } from "./bridges";
import type { IngestProtocol } from "../shapes";

// node-media-server 2.7.4, pinned: its `reject()` inside prePublish refuses a publisher
// cleanly (no postPublish, the client is disconnected at once), `donePublish` fires as soon as
// a publisher leaves, and players pulling the stream get end-of-stream then, so the pipeline's
// ffmpeg exits 0 with its playlists complete. 4.x has none of these. 2.7.4 cannot bind an
// address, so we run its RTMP sessions on a net.Server of our own (which also reports the
// port actually bound); sessions and events still come from its shared context.
/* eslint-disable @typescript-eslint/no-require-imports */
const NodeRtmpSession = require("node-media-server/src/node_rtmp_session") as new (config: unknown, socket: net.Socket) => NmsSession;
const nmsContext = require("node-media-server/src/node_core_ctx") as {
  sessions: Map<string, NmsSession>;
  /** stream path → the id of the session publishing it */
  publishers: Map<string, string>;
  nodeEvent: import("node:events").EventEmitter;
};
const nmsLogger = require("node-media-server/src/node_core_logger") as { setLogType(type: number): void };
/* eslint-enable @typescript-eslint/no-require-imports */

interface NmsSession {
  id: string;
  /** A publisher's players (session ids). */
  players?: Set<string>;
  /** A player's output and its count of messages written since it was corked. */
  res?: { uncork(): void };
  numPlayCache?: number;
  onSocketData(data: Buffer): void;
  ip: string;
  isLocal: boolean;
  socket: net.Socket;
  publishStreamId: number;
  isPublishing: boolean;
  isPlaying: boolean;
  isIdling: boolean;
  playStreamPath: string;
  publishStreamPath: string;
  /** The RTMP message being handled: the media tag handlers read their payload from it. */
  parserPacket: { payload: Buffer; header: { length: number }; clock: number };
  rtmpVideoHandler(): void;
  rtmpAudioHandler(): void;
  sendStatusMessage(streamId: number, level: string, code: string, description: string): void;
  run(): void;
  reject(): void;
  stop(): void;
}

// Our own log carries what matters; node-media-server's console output would only add noise.
nmsLogger.setLogType(0);

// ping_timeout is also the socket's idle timeout in 2.7.4 (it overrides ours), and its own
// pings keep a dead publisher's socket "busy": stalled publishers are found by their media
// instead (PublishStats, the sweep below).
const NMS_CONFIG = { rtmp: { chunk_size: 60000, gop_cache: true, ping: 30, ping_timeout: 60 } };

export const INGEST_APP = "live";

/**
 * node-media-server corks each player's socket and uncorks it only every 10 messages: with
 * video alone that holds a third of a second of media back, in bursts, from every reader (the
 * pipeline among them, where it comes out as late, bunched LL-HLS parts). Whatever a
 * publisher's socket read brought is sent on to the players as soon as it is handled.
 */
function relayAtOnce(session: NmsSession): void {
  const handle = session.onSocketData;
  // run() binds the handler to the socket: replaced before it is called.
  session.onSocketData = function (this: NmsSession, data: Buffer) {
    handle.call(this, data);
    for (const id of this.players ?? []) {
      const player = nmsContext.sessions.get(id);
      if (!player?.res || !player.numPlayCache) continue;
      player.numPlayCache = 0;
      player.res.uncork();
    }
  };
}

/** A connection that neither publishes nor plays by then is dropped (garbage, port scans). */
const IDLE_CONNECTION_MS = 15_000;

/** A publish whose first video tag has not come by then is refused. */
const FIRST_VIDEO_TIMEOUT_MS = 10_000;

/** After the first video tag, how long a publish may go without audio before it starts video-only. */
const AUDIO_GRACE_MS = 1000;

/** How often stalled publishers, idle connections and readers falling behind are looked for. */
const SWEEP_MS = 500;

/**
 * A local reader (the pipeline, a multistream push) may fall this far behind the publisher
 * before it is cut off: node-media-server queues what a reader cannot take in memory, without
 * bound. Seconds of the publisher's own rate, and at least READER_MIN_BUFFER_BYTES.
 */
export const READER_BUFFER_SECONDS = 4;
const READER_MIN_BUFFER_BYTES = 1024 * 1024;

/** The publisher's rate, for the reader cap, is measured over this much of the recent past. */
const RATE_WINDOW_MS = 5000;

/**
 * RTMP status codes a refused publisher receives before its socket closes (OBS logs the code
 * and description; ffmpeg prints `Server error: <description>`). BadName: the key is unknown,
 * deleted or suspended; Rejected: anything else (media, caps, capacity, a crash loop).
 */
export type RefusalStatus = "NetStream.Publish.BadName" | "NetStream.Publish.Rejected";

export interface Refusal {
  status: RefusalStatus;
  reason: string;
}

export const badName = (reason: string): Refusal => ({ status: "NetStream.Publish.BadName", reason });
export const rejected = (reason: string): Refusal => ({ status: "NetStream.Publish.Rejected", reason });

/** One publish on a connection, from the publish command to its end. */
interface Publish {
  streamKey: string;
  protocol: IngestProtocol;
  /** The codecs of its first tags, once seen. */
  video?: string;
  audio?: string;
  /** Handed to the handlers (onPublishStart). */
  started: boolean;
  /** Handed to the handlers, and their answer not back yet. */
  starting?: boolean;
  /** Refuses the publish if no video comes. */
  firstVideoTimer?: NodeJS.Timeout;
  /** Starts it video-only if no audio comes. */
  audioGraceTimer?: NodeJS.Timeout;
  /** node-media-server's own record of the publish, to put back if the connection publishes again. */
  localPath: string;
  streamId: number;
  stats: PublishStats;
  /** Bytes read at recent sweeps, for the publisher's rate. */
  samples: { at: number; bytes: number }[];
}

/** What the ingest knows of a live publisher. */
export interface PublisherStats extends PublishStatsView {
  bytesRead: number;
}

/**
 * An admitted publish carries the stream's internal name: the local RTMP path it is published
 * under (`/live/<alias>`), which the pipeline and pushes read. The stream key, a secret, then
 * appears in no command line (`ps` shows every argv to every local user).
 */
export type Admission = { refusal: Refusal } | { alias: string };

export interface IngestHandlers {
  /**
   * Decides on a publish while the publisher waits: undefined accepts. Must be synchronous:
   * 2.7.4 only honours a reject made right away, and a refusal after NetStream.Publish.Start
   * looks to OBS like a dropped connection, which it retries for ever.
   */
  admit(streamKey: string, publisherId: string): Admission;
  /**
   * The publish sends media onair takes: hand it to its stream (its session row is written
   * meanwhile; node-media-server keeps relaying). A refusal disconnects it.
   */
  onPublishStart(publisherId: string, streamKey: string, protocol: IngestProtocol): Promise<Refusal | undefined>;
  /** The publisher left, or (`refusal`) was refused for what it sent after its start. */
  onPublishEnd(publisherId: string, refusal?: string): void;
}

export interface IngestOptions {
  /** A started publish that sends no media for this long is disconnected (PUBLISH_MEDIA_TIMEOUT_SECONDS). */
  mediaTimeoutMs: number;
  /** A local reader fell too far behind and was cut off (metrics). */
  onReaderCut?(): void;
  /** A publisher was disconnected for sending no media (metrics). */
  onPublisherStalled?(): void;
  /** The WebRTC and SRT bridges' tickets: a local publish under one is its stream key's. */
  bridges?: BridgeTickets;
}

function clearPublishTimers(publish: Publish): void {
  clearTimeout(publish.firstVideoTimer);
  clearTimeout(publish.audioGraceTimer);
}

/** `/live/<key>` → the key; anything else is not a stream of ours. */
export function streamKeyFromPath(streamPath: string): string | undefined {
  const m = /^\/([^/]+)\/([^/?]+)$/.exec(streamPath);
  return m && m[1] === INGEST_APP ? m[2] : undefined;
}

/**
 * Closes a socket once what was written to it has gone out: node-media-server's reject()
 * destroys the socket at once, which can drop the status message just written before it.
 */
function closeAfterFlush(socket: net.Socket): void {
  const destroy = socket.destroy.bind(socket);
  socket.destroy = ((err?: Error) => {
    if (err) return destroy(err);
    socket.end();
    setTimeout(() => destroy(), 2000).unref();
    return socket;
  }) as typeof socket.destroy;
}

export class RtmpIngest {
  private server: net.Server | undefined;
  /** node-media-server's context is process-wide: these are the sessions of this server. */
  private readonly ours = new Map<string, NmsSession>();
  /** When each connection of ours was accepted (idle connections are dropped). */
  private readonly acceptedAt = new Map<string, number>();
  /** Publishes admitted in prePublish (stream key, protocol), until their postPublish. */
  private readonly admitted = new Map<string, { streamKey: string; protocol: IngestProtocol }>();
  /** Admitted publishes, by publisher (connection) id. */
  private readonly publishes = new Map<string, Publish>();
  private readonly listeners: [string, (...args: string[]) => void][] = [];
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly handlers: IngestHandlers,
    private readonly log: Logger,
    private readonly options: IngestOptions,
  ) {}

  async listen(port: number, host: string): Promise<number> {
    this.on("prePublish", (id: string, streamPath: string) => this.prePublish(id, streamPath));
    this.on("postPublish", (id: string) => {
      const admitted = this.admitted.get(id);
      this.admitted.delete(id);
      if (!admitted || !this.ours.has(id)) return;
      // The session starts once the first tags show H.264 and AAC (see mediaCheck.ts).
      const session = this.ours.get(id)!;
      const publish: Publish = {
        ...admitted,
        started: false,
        stats: new PublishStats(Date.now()),
        samples: [],
        localPath: session.publishStreamPath,
        streamId: session.publishStreamId,
      };
      publish.firstVideoTimer = setTimeout(() => this.refuse(id, `no video received within ${FIRST_VIDEO_TIMEOUT_MS / 1000} s of the publish`), FIRST_VIDEO_TIMEOUT_MS);
      this.publishes.set(id, publish);
    });
    this.on("donePublish", (id: string) => {
      if (this.endPublish(id)) this.publishEnded(id);
    });
    this.on("prePlay", (id: string) => this.prePlay(id));
    this.on("doneConnect", (id: string) => {
      // Admitted but never published (node-media-server refused it after us), or published.
      if (this.admitted.delete(id) || this.endPublish(id)) this.publishEnded(id);
      this.ours.delete(id);
      this.acceptedAt.delete(id);
    });

    const server = net.createServer((socket) => {
      const session = new NodeRtmpSession(NMS_CONFIG, socket);
      this.inspectMedia(session);
      relayAtOnce(session);
      this.ours.set(session.id, session);
      this.acceptedAt.set(session.id, Date.now());
      session.run();
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        server.on("error", (err) => this.log.error({ err }, "RTMP server error"));
        resolve();
      });
    });
    this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweepTimer.unref();
    return (server.address() as net.AddressInfo).port;
  }

  /** The RTMP server accepts connections (readiness). */
  get listening(): boolean {
    return this.server?.listening ?? false;
  }

  /** Bytes read so far from a connection of ours (a publisher's: its ingest bitrate); undefined once it is gone. */
  bytesRead(publisherId: string): number | undefined {
    return this.ours.get(publisherId)?.socket.bytesRead;
  }

  /** A live publisher's media clock, keyframe interval and audio; undefined once it is gone. */
  publisherStats(publisherId: string): PublisherStats | undefined {
    const session = this.ours.get(publisherId);
    const publish = this.publishes.get(publisherId);
    if (!session || !publish) return undefined;
    const { mediaMs, lastMediaAt, keyframeIntervalMs, hasAudio } = publish.stats;
    return { mediaMs, lastMediaAt, keyframeIntervalMs, hasAudio, bytesRead: session.socket.bytesRead };
  }

  /** Disconnects a publisher at once (suspend, delete, a dead pipeline), telling it why when there is a reason. */
  disconnect(publisherId: string, refusal?: Refusal): void {
    const session = this.ours.get(publisherId);
    if (!session) return;
    if (refusal) this.sendRefusal(session, refusal);
    session.reject();
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    for (const id of [...this.publishes.keys()]) this.endPublish(id);
    for (const [event, listener] of this.listeners) nmsContext.nodeEvent.off(event, listener);
    this.listeners.length = 0;
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const session of [...this.ours.values()]) session.stop();
    this.ours.clear();
    this.acceptedAt.clear();
    await closed;
  }

  private on(event: string, listener: (...args: string[]) => void): void {
    nmsContext.nodeEvent.on(event, listener);
    this.listeners.push([event, listener]);
  }

  private prePublish(id: string, streamPath: string): void {
    const session = this.ours.get(id);
    if (!session) return;
    const current = this.publishes.get(id);
    if (current || this.admitted.has(id)) {
      // One publish per connection. node-media-server has already overwritten its record of
      // the first with this one's: put it back, so that closing the connection ends the
      // right stream, then close it.
      if (current) {
        session.publishStreamPath = current.localPath;
        session.publishStreamId = current.streamId;
      }
      this.log.info({ publisherId: id, ip: session.ip }, "publish refused: the connection is already publishing");
      this.sendRefusal(session, rejected("this connection is already publishing: one stream per connection"));
      session.reject();
      return;
    }
    const name = streamKeyFromPath(streamPath);
    // A bridge (WHIP, SRT) publishes from this machine under a ticket standing for the key.
    const bridged = name !== undefined && this.isLocal(session) ? this.options.bridges?.redeem(name, session.socket) : undefined;
    const key = bridged?.streamKey ?? name;
    let admission: Admission;
    try {
      admission = key === undefined ? { refusal: badName(`publish to ${INGEST_APP}/<stream key> only`) } : this.handlers.admit(key, id);
    } catch (err) {
      this.log.error({ err, publisherId: id }, "could not decide on a publish");
      admission = { refusal: rejected("internal error on the server: reconnect later") };
    }
    if ("refusal" in admission) {
      const { refusal } = admission;
      // The key itself is a secret: never logged.
      this.log.info({ publisherId: id, ip: session.ip, reason: refusal.reason, status: refusal.status }, "publish refused");
      this.sendRefusal(session, refusal);
      session.reject();
      return;
    }
    // Published under its internal name (node-media-server registers the path this handler
    // leaves on the session); the key is remembered for postPublish.
    const localPath = `/${INGEST_APP}/${admission.alias}`;
    session.publishStreamPath = localPath;
    this.admitted.set(id, { streamKey: key!, protocol: bridged?.protocol ?? "rtmp" });
    // The newest authenticated publisher wins: one still holding the stream (a half-open
    // connection, an encoder that reconnected before its old socket died) makes room, so an
    // encoder recovering from a dead uplink is never locked out of its own key.
    const holderId = nmsContext.publishers.get(localPath);
    const holder = holderId !== undefined && holderId !== id ? this.ours.get(holderId) : undefined;
    if (holder) {
      this.log.warn({ publisherId: id, replaced: holderId, ip: session.ip }, "a new publisher takes over the stream: the previous one is disconnected");
      this.disconnect(holderId!, rejected("replaced by a newer publisher of this stream"));
    }
  }

  /** The status message for a refused publish, on the publish's own stream. */
  private sendRefusal(session: NmsSession, refusal: Refusal): void {
    if (!session.socket.writable) return;
    try {
      session.sendStatusMessage(session.publishStreamId, "error", refusal.status, refusal.reason);
      closeAfterFlush(session.socket);
    } catch (err) {
      this.log.debug({ err }, "could not send the refusal status");
    }
  }

  /**
   * Reads the codec of each publish's first video and first audio tag, and the clock and
   * keyframes of every tag, before node-media-server handles them (the pinned 2.7.4 calls
   * these handlers once per message).
   */
  private inspectMedia(session: NmsSession): void {
    const payload = () => session.parserPacket.payload.subarray(0, session.parserPacket.header.length);
    const handleVideo = session.rtmpVideoHandler.bind(session);
    const handleAudio = session.rtmpAudioHandler.bind(session);
    session.rtmpVideoHandler = () => {
      const publish = this.publishes.get(session.id);
      if (!publish) return handleVideo();
      publish.stats.video(payload(), session.parserPacket.clock, Date.now());
      const codec = publish.video === undefined ? videoCodecOf(payload()) : undefined;
      if (codec === undefined) return handleVideo();
      publish.video = codec;
      const refusal = refuseVideo(codec);
      if (refusal) return this.refuse(session.id, refusal);
      handleVideo();
      this.startWhenKnown(session.id, publish);
    };
    session.rtmpAudioHandler = () => {
      const publish = this.publishes.get(session.id);
      if (!publish) return handleAudio();
      publish.stats.audio(session.parserPacket.clock, Date.now());
      const codec = publish.audio === undefined ? audioCodecOf(payload()) : undefined;
      if (codec === undefined) return handleAudio();
      publish.audio = codec;
      const refusal = refuseAudio(codec);
      if (refusal) return this.refuse(session.id, refusal);
      handleAudio();
      this.startWhenKnown(session.id, publish);
    };
  }

  /**
   * The video is H.264: the publish becomes a live session once its audio is known too, or
   * after a moment without audio (video-only publishers exist; ffmpeg sends video first).
   */
  private startWhenKnown(id: string, publish: Publish): void {
    if (publish.started || publish.video === undefined) return;
    if (publish.audio === undefined) {
      publish.audioGraceTimer ??= setTimeout(() => this.start(id, publish), AUDIO_GRACE_MS);
      return;
    }
    this.start(id, publish);
  }

  private start(id: string, publish: Publish): void {
    if (publish.started || publish.starting || this.publishes.get(id) !== publish) return;
    clearPublishTimers(publish);
    publish.starting = true;
    this.log.debug({ publisherId: id, video: publish.video, audio: publish.audio ?? "none" }, "publisher's media accepted");
    void this.handlers.onPublishStart(id, publish.streamKey, publish.protocol).then(
      (refusal) => this.started(id, publish, refusal),
      (err: unknown) => {
        this.log.error({ err, publisherId: id }, "could not start a publish");
        this.started(id, publish, rejected("internal error on the server: reconnect later"));
      },
    );
  }

  private started(id: string, publish: Publish, refusal: Refusal | undefined): void {
    // Gone meanwhile: the handlers heard of its end already.
    if (this.publishes.get(id) !== publish) return;
    if (refusal) {
      const session = this.ours.get(id);
      this.endPublish(id);
      this.publishEnded(id);
      this.log.info({ publisherId: id, ip: session?.ip, reason: refusal.reason, status: refusal.status }, "publish refused");
      if (session) this.disconnect(id, refusal);
      return;
    }
    publish.started = true;
  }

  /** Refuses a publish for what it sends (before its session starts, or ending it). */
  private refuse(id: string, reason: string): void {
    const session = this.ours.get(id);
    const publish = this.endPublish(id);
    if (!session) return;
    this.log.warn({ publisherId: id, ip: session.ip, reason }, "publish refused");
    if (publish) this.publishEnded(id, reason);
    this.disconnect(id, rejected(reason));
  }

  /** An admitted publish is over (whether or not it started): the handlers let go of it. */
  private publishEnded(id: string, refusal?: string): void {
    try {
      this.handlers.onPublishEnd(id, refusal);
    } catch (err) {
      this.log.error({ err, publisherId: id }, "could not end a publish");
    }
  }

  /** Forgets a publish and its timers; returns it, if there was one. */
  private endPublish(id: string): Publish | undefined {
    const publish = this.publishes.get(id);
    if (!publish) return undefined;
    clearPublishTimers(publish);
    this.publishes.delete(id);
    return publish;
  }

  /**
   * Every SWEEP_MS: publishers whose media stopped (asleep, uplink gone, socket half-open) are
   * disconnected, so their stream's reconnect window starts and the key is free; connections
   * that never publish or play are dropped; readers too far behind are cut off.
   */
  private sweep(): void {
    const now = Date.now();
    for (const [id, publish] of this.publishes) {
      const session = this.ours.get(id);
      if (!session) continue;
      publish.samples.push({ at: now, bytes: session.socket.bytesRead });
      while (publish.samples.length > 2 && now - publish.samples[0]!.at > RATE_WINDOW_MS) publish.samples.shift();
      const silentMs = now - publish.stats.lastMediaAt;
      if (publish.started && silentMs > this.options.mediaTimeoutMs) {
        this.log.warn({ publisherId: id, ip: session.ip, silentSeconds: Math.round(silentMs / 1000) }, "publisher sent no media: disconnected");
        this.options.onPublisherStalled?.();
        session.reject();
      }
    }
    for (const [id, session] of this.ours) {
      if (session.isPlaying) this.capReader(session);
      else if (!session.isPublishing && !session.isIdling && now - (this.acceptedAt.get(id) ?? now) > IDLE_CONNECTION_MS) {
        this.log.debug({ connectionId: id, ip: session.ip }, "RTMP connection neither published nor played: dropped");
        session.stop();
      }
    }
  }

  /** A reader whose unsent media exceeds a few seconds of its publisher's rate is cut off. */
  private capReader(reader: NmsSession): void {
    const buffered = reader.socket.writableLength;
    if (buffered <= READER_MIN_BUFFER_BYTES) return;
    const publisherId = nmsContext.publishers.get(reader.playStreamPath);
    const samples = publisherId !== undefined ? this.publishes.get(publisherId)?.samples : undefined;
    const first = samples?.[0];
    const last = samples?.[samples.length - 1];
    const rate = first && last && last.at > first.at ? ((last.bytes - first.bytes) * 1000) / (last.at - first.at) : 0;
    const cap = Math.max(READER_MIN_BUFFER_BYTES, rate * READER_BUFFER_SECONDS);
    if (buffered <= cap) return;
    this.log.warn(
      { readerId: reader.id, bufferedBytes: buffered, capBytes: Math.round(cap), publisherId },
      `RTMP reader fell more than ${READER_BUFFER_SECONDS} s behind its publisher: cut off`,
    );
    this.options.onReaderCut?.();
    reader.stop();
  }

  /** A connection from this machine (the pipeline, pushes, bridges). */
  private isLocal(session: NmsSession): boolean {
    return session.isLocal || session.socket.remoteAddress === session.socket.localAddress;
  }

  /** Only this machine (the pipeline) may pull streams over RTMP; viewers use HLS. */
  private prePlay(id: string): void {
    const session = this.ours.get(id);
    if (!session) return;
    if (!this.isLocal(session)) {
      this.log.info({ ip: session.ip }, "RTMP play refused: viewers play HLS");
      session.reject();
    }
  }
}
