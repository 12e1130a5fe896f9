import net from "node:net";
import type { Logger } from "../log";
import { audioCodecOf, refuseAudio, refuseVideo, videoCodecOf } from "./mediaCheck";

// node-media-server 2.7.4, pinned: its `reject()` inside prePublish refuses a publisher
// cleanly (no postPublish, the client is disconnected at once), `donePublish` fires as soon as
// a publisher leaves, and players pulling the stream get end-of-stream then, so the pipeline's
// ffmpeg exits 0 with its playlists complete. 4.x has none of these. 2.7.4 cannot bind an
// address, so we run its RTMP sessions on a net.Server of our own (which also reports the
// port actually bound); sessions and events still come from its shared context.
/* eslint-disable @typescript-eslint/no-require-imports */
const NodeRtmpSession = require("node-media-server/src/node_rtmp_session") as new (config: unknown, socket: net.Socket) => NmsSession;
const nmsContext = require("node-media-server/src/node_core_ctx") as { sessions: Map<string, NmsSession>; nodeEvent: import("node:events").EventEmitter };
const nmsLogger = require("node-media-server/src/node_core_logger") as { setLogType(type: number): void };
/* eslint-enable @typescript-eslint/no-require-imports */

interface NmsSession {
  id: string;
  ip: string;
  isLocal: boolean;
  socket: net.Socket;
  /** The RTMP message being handled: the media tag handlers read their payload from it. */
  parserPacket: { payload: Buffer; header: { length: number } };
  rtmpVideoHandler(): void;
  rtmpAudioHandler(): void;
  run(): void;
  reject(): void;
  stop(): void;
}

// Our own log carries what matters; node-media-server's console output would only add noise.
nmsLogger.setLogType(0);

const NMS_CONFIG = { rtmp: { chunk_size: 60000, gop_cache: true, ping: 30, ping_timeout: 60 } };

export const INGEST_APP = "live";

const IDLE_TIMEOUT_MS = 15_000;

/** A publish whose first video tag has not come by then is refused. */
const FIRST_VIDEO_TIMEOUT_MS = 10_000;

/** After the first video tag, how long a publish may go without audio before it starts video-only. */
const AUDIO_GRACE_MS = 1000;

/** One publish on a connection, from the publish command to its end. */
interface Publish {
  streamKey: string;
  /** The codecs of its first tags, once seen. */
  video?: string;
  audio?: string;
  /** Handed to the session manager. */
  started: boolean;
  timers: NodeJS.Timeout[];
}

export interface IngestHandlers {
  /**
   * Decides on a publish while the publisher waits: undefined accepts, a string is the
   * reason for refusing. Must be synchronous: 2.7.4 only honours a reject made right away.
   */
  admit(streamKey: string, publisherId: string): string | undefined;
  onPublishStart(publisherId: string, streamKey: string): void;
  /** The publisher left, or (`refusal`) was refused for what it sent after its session started. */
  onPublishEnd(publisherId: string, refusal?: string): void;
}

/** `/live/<key>` → the key; anything else is not a stream of ours. */
export function streamKeyFromPath(streamPath: string): string | undefined {
  const m = /^\/([^/]+)\/([^/?]+)$/.exec(streamPath);
  return m && m[1] === INGEST_APP ? m[2] : undefined;
}

export class RtmpIngest {
  private server: net.Server | undefined;
  /** node-media-server's context is process-wide: these are the sessions of this server. */
  private readonly ours = new Map<string, NmsSession>();
  /** Admitted publishes, by publisher (connection) id. */
  private readonly publishes = new Map<string, Publish>();
  private readonly listeners: [string, (...args: string[]) => void][] = [];

  constructor(
    private readonly handlers: IngestHandlers,
    private readonly log: Logger,
  ) {}

  async listen(port: number, host: string): Promise<number> {
    this.on("prePublish", (id: string, streamPath: string) => this.prePublish(id, streamPath));
    this.on("postPublish", (id: string, streamPath: string) => {
      const key = this.ours.has(id) ? streamKeyFromPath(streamPath) : undefined;
      if (!key) return;
      // The session starts once the first tags show H.264 and AAC (see mediaCheck.ts).
      const publish: Publish = { streamKey: key, started: false, timers: [] };
      publish.timers.push(setTimeout(() => this.refuse(id, `no video received within ${FIRST_VIDEO_TIMEOUT_MS / 1000} s of the publish`), FIRST_VIDEO_TIMEOUT_MS));
      this.publishes.set(id, publish);
    });
    this.on("donePublish", (id: string) => {
      const publish = this.endPublish(id);
      if (publish?.started) this.handlers.onPublishEnd(id);
    });
    this.on("prePlay", (id: string) => this.prePlay(id));
    this.on("doneConnect", (id: string) => {
      this.endPublish(id);
      this.ours.delete(id);
    });

    const server = net.createServer((socket) => {
      // A connection that goes quiet (garbage, a stalled client, a half-open socket) is
      // dropped; publishers and the pipeline's pulls carry media all the time.
      socket.setTimeout(IDLE_TIMEOUT_MS, () => socket.destroy());
      const session = new NodeRtmpSession(NMS_CONFIG, socket);
      this.inspectMedia(session);
      this.ours.set(session.id, session);
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

  /** Disconnects a publisher at once (suspend, delete, a dead pipeline). */
  disconnect(publisherId: string): void {
    this.ours.get(publisherId)?.reject();
  }

  async close(): Promise<void> {
    for (const id of [...this.publishes.keys()]) this.endPublish(id);
    for (const [event, listener] of this.listeners) nmsContext.nodeEvent.off(event, listener);
    this.listeners.length = 0;
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const session of [...this.ours.values()]) session.stop();
    this.ours.clear();
    await closed;
  }

  private on(event: string, listener: (...args: string[]) => void): void {
    nmsContext.nodeEvent.on(event, listener);
    this.listeners.push([event, listener]);
  }

  private prePublish(id: string, streamPath: string): void {
    const session = this.ours.get(id);
    if (!session) return;
    const key = streamKeyFromPath(streamPath);
    const refusal = key === undefined ? `publish to ${INGEST_APP}/<stream key> only` : this.handlers.admit(key, id);
    if (refusal !== undefined) {
      // The key itself is a secret: never logged.
      this.log.info({ publisherId: id, ip: session.ip, reason: refusal }, "publish refused");
      session.reject();
    }
  }

  /**
   * Reads the codec of each publish's first video and first audio tag, before node-media-server
   * handles them (the pinned 2.7.4 calls these handlers once per message).
   */
  private inspectMedia(session: NmsSession): void {
    const payload = () => session.parserPacket.payload.subarray(0, session.parserPacket.header.length);
    const handleVideo = session.rtmpVideoHandler.bind(session);
    const handleAudio = session.rtmpAudioHandler.bind(session);
    session.rtmpVideoHandler = () => {
      const publish = this.publishes.get(session.id);
      const codec = publish && publish.video === undefined ? videoCodecOf(payload()) : undefined;
      if (codec === undefined) return handleVideo();
      publish!.video = codec;
      const refusal = refuseVideo(codec);
      if (refusal) return this.refuse(session.id, refusal);
      handleVideo();
      this.startWhenKnown(session.id, publish!);
    };
    session.rtmpAudioHandler = () => {
      const publish = this.publishes.get(session.id);
      const codec = publish && publish.audio === undefined ? audioCodecOf(payload()) : undefined;
      if (codec === undefined) return handleAudio();
      publish!.audio = codec;
      const refusal = refuseAudio(codec);
      if (refusal) return this.refuse(session.id, refusal);
      handleAudio();
      this.startWhenKnown(session.id, publish!);
    };
  }

  /**
   * The video is H.264: the publish becomes a live session once its audio is known too, or
   * after a moment without audio (video-only publishers exist; ffmpeg sends video first).
   */
  private startWhenKnown(id: string, publish: Publish): void {
    if (publish.started || publish.video === undefined) return;
    if (publish.audio === undefined) {
      if (publish.timers.length < 2) publish.timers.push(setTimeout(() => this.start(id, publish), AUDIO_GRACE_MS));
      return;
    }
    this.start(id, publish);
  }

  private start(id: string, publish: Publish): void {
    if (publish.started || this.publishes.get(id) !== publish) return;
    for (const t of publish.timers.splice(0)) clearTimeout(t);
    publish.started = true;
    this.log.debug({ publisherId: id, video: publish.video, audio: publish.audio ?? "none" }, "publisher's media accepted");
    this.handlers.onPublishStart(id, publish.streamKey);
  }

  /** Refuses a publish for what it sends (before its session starts, or ending it). */
  private refuse(id: string, reason: string): void {
    const session = this.ours.get(id);
    const publish = this.endPublish(id);
    if (!session) return;
    this.log.warn({ publisherId: id, ip: session.ip, reason }, "publish refused");
    if (publish?.started) this.handlers.onPublishEnd(id, reason);
    session.reject();
  }

  /** Forgets a publish and its timers; returns it, if there was one. */
  private endPublish(id: string): Publish | undefined {
    const publish = this.publishes.get(id);
    if (!publish) return undefined;
    for (const t of publish.timers.splice(0)) clearTimeout(t);
    this.publishes.delete(id);
    return publish;
  }

  /** Only this machine (the pipeline) may pull streams over RTMP; viewers use HLS. */
  private prePlay(id: string): void {
    const session = this.ours.get(id);
    if (!session) return;
    if (!session.isLocal && session.socket.remoteAddress !== session.socket.localAddress) {
      this.log.info({ ip: session.ip }, "RTMP play refused: viewers play HLS");
      session.reject();
    }
  }
}
