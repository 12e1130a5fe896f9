import crypto from "node:crypto";
import net from "node:net";
import tls from "node:tls";
import type { Logger } from "../log";
import { decodeAmf0, type Amf0Value } from "./amf0";
import { ChunkReader, ChunkWriter, pingResponse, RtmpType, controlMessage, type RtmpMessage } from "./chunks";
import { AUDIO_FOURCCS, VIDEO_FOURCCS, readAudioTag, readVideoTag, type AudioTag, type VideoTag } from "./enhanced";
import { CapsEx, FourCcInfo, type ConnectCaps, type ServerCaps } from "./enhancedConnect";
import { ServerHandshake, helloPacket } from "./handshake";
import {
  answerPlay,
  endPublishWithStatus,
  answerPublish,
  CSID_AUDIO,
  CSID_DATA,
  CSID_VIDEO,
  endPlay,
  handleCommand,
  initialServerState,
  reconnectRequest,
  type CommandStep,
  type Outgoing,
  type PlayEndCause,
  type PublishEndReason,
  type ServerSessionState,
  type ServerSettings,
} from "./serverCommands";

// The socket side of onair's RTMP server: one RtmpServerConnection per accepted socket (the
// handshake, the chunk streams, acknowledgements, pings, the caller's publish or play decision,
// media to a listener or from the caller to a player), and RtmpServer, which listens on TCP or
// TLS. What each command means is decided by serverCommands.ts, which knows no socket.
//
// Backpressure: the caller's publish hook and its media listener may return a promise; until it
// settles the connection reads nothing more from the socket (TCP then slows the publisher).
// Messages are handled strictly one after the other through one queue, so the same mechanism
// keeps commands, media and the end in arrival order: a listener never sees media after the end,
// nor the end of a publish whose decision is still pending.
//
// Players are the other way round: the caller pushes media with sendMedia, which writes at once
// and never waits; the caller watches bufferedBytes and drops a reader that falls behind, so one
// slow reader cannot hold up the publisher or the other readers.

export type PublishedMedia =
  | { kind: "video"; timestamp: number; tag: VideoTag; body: Buffer }
  | { kind: "audio"; timestamp: number; tag: AudioTag; body: Buffer }
  /** A data message: `@setDataFrame` taken off, so `name` is "onMetaData" for metadata; `body` as sent. */
  | { kind: "data"; timestamp: number; name: string; values: Amf0Value[]; body: Buffer };

/** Takes one publish's media, then its end (exactly once). */
export interface PublishSink {
  /** In arrival order; a returned promise holds further reading until it settles. A throw or rejection ends the publish. */
  media(media: PublishedMedia): void | Promise<void>;
  end(reason: PublishEndReason): void;
}

export interface PublishRequest {
  app: string;
  streamName: string;
  /** "live", "record" or "append". */
  type: string;
  tcUrl: string;
  caps: ConnectCaps;
  remoteAddress: string;
  /** For requestReconnect() and close() later. */
  connection: RtmpServerConnection;
}

export type PublishDecision = { ok: true; sink: PublishSink } | { ok: false; code: string; description: string };

export interface PlayRequest {
  app: string;
  streamName: string;
  tcUrl: string;
  remoteAddress: string;
  /** For sendMedia(), endPlay() and close(). */
  connection: RtmpServerConnection;
}

/** The caller's side of an accepted play. */
export interface PlayReader {
  /** The player has been told the play started (NetStream.Play.Start): media may go to it from now on. */
  started?(): void;
  /** The play ended, whatever ended it (the player, its socket, endPlay(), close()); told exactly once. sendMedia does nothing after it. */
  end(): void;
}

export type PlayDecision = { ok: true; reader: PlayReader } | { ok: false; code: string; description: string };

/** One message for a player: the body as the publisher sent it, the timestamp absolute in ms. */
export interface PlayMedia {
  kind: "video" | "audio" | "data";
  timestamp: number;
  body: Buffer;
}

export interface RtmpServerOptions {
  /** Whether a publish may go on; on ok, the sink takes its media. A throw counts as NetStream.Publish.Failed. */
  onPublish(request: PublishRequest): Promise<PublishDecision>;
  /** Whether a play may go on; on ok, the reader is told of its end. A throw counts as NetStream.Play.Failed. Without it, every play is refused. */
  onPlay?(request: PlayRequest): Promise<PlayDecision>;
  log?: Logger;
  /** A connection that has not had a publish or play accepted within this is dropped. 10 s unless set. */
  timeoutMs?: number;
  /** What the connect _result says this server takes (E-RTMP). Every codec the parsers know, forwarded, and all of capsEx, unless set. */
  caps?: ServerCaps;
  /** A single message larger than this is a protocol error. 8 MiB unless set (a 4K keyframe fits). */
  maxMessageSize?: number;
}

const everyCodec = (list: readonly string[]) => Object.fromEntries(list.map((c) => [c, FourCcInfo.canForward]));
const DEFAULT_CAPS: ServerCaps = {
  video: everyCodec(VIDEO_FOURCCS),
  audio: everyCodec(AUDIO_FOURCCS),
  capsEx: CapsEx.reconnect | CapsEx.multitrack | CapsEx.modEx | CapsEx.timestampNanoOffset,
};
/** After an error status, how long the client has to read it and hang up before we do. */
const CLOSE_GRACE_MS = 2000;
const MEDIA_TYPE = { video: RtmpType.video, audio: RtmpType.audio, data: RtmpType.amf0Data } as const;
const MEDIA_CSID = { video: CSID_VIDEO, audio: CSID_AUDIO, data: CSID_DATA } as const;
/** AMF0 "@setDataFrame" (string marker, 16-bit length, the text): a publisher's instruction to the server, not for players. */
const SET_DATA_FRAME = Buffer.from([0x02, 0x00, 0x0d, ...Buffer.from("@setDataFrame")]);
const ON_META_DATA = Buffer.from([0x02, 0x00, 0x0a, ...Buffer.from("onMetaData")]);
const startsWith = (body: Buffer, prefix: Buffer) => body.subarray(0, prefix.length).equals(prefix);

type QueueItem = { message: RtmpMessage } | { end: PublishEndReason };

export class RtmpServerConnection {
  /** Resolves once the socket is closed and, if a publish was accepted, its sink told of the end. */
  readonly closed: Promise<void>;
  private markClosed!: () => void;
  private readonly log: Logger | undefined;
  private handshake: ServerHandshake | undefined = new ServerHandshake(helloPacket(0, (n) => crypto.randomBytes(n)));
  private readonly reader: ChunkReader;
  private readonly writer = new ChunkWriter();
  private readonly settings: ServerSettings;
  private state: ServerSessionState = initialServerState();
  private readonly queue: QueueItem[] = [];
  private pumping = false;
  private sink: PublishSink | undefined;
  private endTold = false;
  /** The accepted play's reader, until it is told of the end. */
  private playReader: PlayReader | undefined;
  /** Why we are closing, if we are: becomes the end reason of a publish under way. */
  private closeReason: PublishEndReason | undefined;
  private socketError: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly timeoutMs: number;
  /** Bytes received from the first (handshake included, as librtmp counts), for our acknowledgements. */
  private bytesReceived = 0;
  private lastAcknowledged = 0;
  private peerWindow = 0;

  constructor(
    private readonly socket: net.Socket,
    private readonly options: RtmpServerOptions,
  ) {
    this.log = options.log?.child({ rtmp: socket.remoteAddress });
    this.reader = new ChunkReader({ maxMessageSize: options.maxMessageSize ?? 8 * 1024 * 1024, maxPartialBytes: 2 * (options.maxMessageSize ?? 8 * 1024 * 1024), maxChunkStreams: 64 });
    this.settings = { caps: options.caps ?? DEFAULT_CAPS, windowAckSize: 2_500_000, chunkSize: 4096, maxStreams: 8 };
    this.closed = new Promise((resolve) => (this.markClosed = resolve));
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.armTimer(`no publish or play within ${this.timeoutMs} ms`);
    socket.setNoDelay(true);
    socket.on("data", (data: Buffer) => this.onData(data));
    socket.on("error", (err: NodeJS.ErrnoException) => (this.socketError ??= err.code ?? err.message));
    socket.once("close", () => {
      clearTimeout(this.timer);
      this.enqueue({ end: this.closeReason ?? { kind: "disconnected", ...(this.socketError ? { error: this.socketError } : {}) } });
    });
  }

  get remoteAddress(): string {
    return this.socket.remoteAddress ?? "";
  }

  get remotePort(): number | undefined {
    return this.socket.remotePort;
  }

  get localAddress(): string {
    return this.socket.localAddress ?? "";
  }

  get localPort(): number | undefined {
    return this.socket.localPort;
  }

  /** Bytes received on the socket so far (for a publisher's bitrate). */
  get bytesRead(): number {
    return this.socket.bytesRead;
  }

  /** Bytes written for a player and not yet taken by the kernel: a reader falling behind shows here. */
  get bufferedBytes(): number {
    return this.socket.writableLength;
  }

  get isPublishing(): boolean {
    return this.state.phase === "publishing";
  }

  get isPlaying(): boolean {
    return this.state.phase === "playing" && this.playReader !== undefined;
  }

  /**
   * Writes one message on the played stream, at once (it never waits: watch bufferedBytes).
   * False when this connection is not playing (a publisher, a play not yet accepted or ended).
   */
  sendMedia(media: PlayMedia): boolean {
    const play = this.state.play;
    if (!this.isPlaying || !play || this.socket.destroyed || !this.socket.writable) return false;
    const data = media.kind === "data";
    // A publisher's metadata comes as @setDataFrame onMetaData …; a player expects onMetaData itself.
    const body = data && startsWith(media.body, SET_DATA_FRAME) ? media.body.subarray(SET_DATA_FRAME.length) : media.body;
    // ffmpeg's FLV demuxer (5.1) takes onMetaData stamped later than 0 for a packet of a data
    // stream and adds a phantom subtitle stream to the reader's input: metadata always goes at 0.
    const metadata = data && startsWith(body, ON_META_DATA);
    // RTMP timestamps are 32 bits and wrap (spec 5.3.1.3); a longer-running caller's clock wraps with them.
    const timestamp = metadata ? 0 : Math.trunc(media.timestamp) >>> 0;
    const message: RtmpMessage = { csid: MEDIA_CSID[media.kind], type: MEDIA_TYPE[media.kind], streamId: play.streamId, timestamp, payload: body };
    let bytes: Buffer;
    try {
      bytes = this.writer.write(message);
    } catch (err) {
      // Only a body over RTMP's 24-bit length gets here: that one message is lost, not the play.
      this.log?.warn({ kind: media.kind, err: (err as Error).message }, "RTMP media for a player dropped");
      return false;
    }
    this.socket.write(bytes);
    return true;
  }

  /**
   * The played stream ended: the player is told (Stream EOF, Play.UnpublishNotify, Play.Stop),
   * the reader's end() is called before this returns, and the socket is let go once that is
   * sent. Nothing when not playing.
   */
  endPlay(): void {
    this.apply(endPlay(this.state));
  }

  /** Asks an E-RTMP publisher to reconnect (to `tcUrl`, or the same server); false when its connect did not say it can, or it is gone. */
  requestReconnect(tcUrl?: string, description?: string): boolean {
    const request = reconnectRequest(this.state, tcUrl, description);
    if (!request || this.socket.destroyed) return false;
    this.send([request]);
    return true;
  }

  /** Ends a publish under way with an error status the publisher can show (code and description), then closes; its sink hears "closed". */
  closeWithStatus(code: string, description: string): void {
    if (this.socket.destroyed) return;
    this.closeReason ??= { kind: "closed" };
    this.apply(endPublishWithStatus(this.state, code, description));
  }

  /** Closes once what is written has gone out (a reconnect request, say); a publish under way ends with reason "closed". */
  closeAfterSent(): void {
    this.closeReason ??= { kind: "closed" };
    this.closeAfterFlush();
  }

  /** Drops the connection; a publish under way ends with reason "closed". */
  close(): void {
    this.drop({ kind: "closed" }, "closed by the server");
  }

  private drop(reason: PublishEndReason, why: string): void {
    if (this.socket.destroyed) return;
    this.closeReason ??= reason;
    this.log?.info({ why }, "RTMP connection dropped");
    this.socket.destroy();
  }

  private onData(data: Buffer): void {
    this.bytesReceived += data.length;
    let messages: RtmpMessage[];
    try {
      if (this.handshake) {
        const step = this.handshake.push(data);
        if (step.send) this.socket.write(step.send);
        if (!step.done) return;
        this.handshake = undefined;
        data = step.rest!;
      }
      messages = this.reader.push(data);
    } catch (err) {
      return this.drop({ kind: "protocol", message: (err as Error).message }, `not RTMP: ${(err as Error).message}`);
    }
    // spec 5.4.3: acknowledge once the peer's window is reached.
    if (this.peerWindow > 0 && this.bytesReceived - this.lastAcknowledged >= this.peerWindow) {
      this.lastAcknowledged = this.bytesReceived;
      this.send([{ kind: "message", message: controlMessage(RtmpType.acknowledgement, this.bytesReceived) }]);
    }
    for (const message of messages) this.enqueue({ message });
  }

  private enqueue(item: QueueItem): void {
    this.queue.push(item);
    void this.pump();
  }

  /** Handles what arrived, one item at a time; pauses the socket while a hook or listener's promise is pending. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (let item = this.queue.shift(); item; item = this.queue.shift()) {
        try {
          const pending = "end" in item ? this.onClosed(item.end) : this.handle(item.message);
          if (pending) {
            this.socket.pause();
            await pending;
          }
        } catch (err) {
          // Nothing a peer sends may take the process down: an unforeseen failure drops that connection only.
          this.log?.error({ err }, "RTMP message handling failed");
          this.drop({ kind: "protocol", message: (err as Error).message }, "message handling failed");
        }
      }
    } finally {
      this.pumping = false;
      if (!this.socket.destroyed) this.socket.resume();
    }
  }

  private handle(message: RtmpMessage): Promise<void> | undefined {
    const { payload } = message;
    switch (message.type) {
      case RtmpType.windowAckSize:
        if (payload.length >= 4) this.peerWindow = payload.readUInt32BE(0);
        return undefined;
      case RtmpType.userControl: {
        const pong = pingResponse(message);
        if (pong) this.send([{ kind: "message", message: pong }]);
        return undefined;
      }
      case RtmpType.amf0Command:
      case RtmpType.amf3Command:
        return this.onCommand(message);
      case RtmpType.audio:
      case RtmpType.video:
      case RtmpType.amf0Data:
      case RtmpType.amf3Data:
        return this.onMedia(message);
      default:
        // Set Chunk Size and Abort took effect in the reader; acknowledgements and peer bandwidth ask nothing of a server.
        return undefined;
    }
  }

  private onCommand(message: RtmpMessage): Promise<void> | undefined {
    let values: Amf0Value[];
    try {
      // An AMF3 command message starts with one format byte, then AMF0 all the same.
      values = decodeAmf0(message.type === RtmpType.amf3Command ? message.payload.subarray(1) : message.payload);
    } catch (err) {
      this.drop({ kind: "protocol", message: (err as Error).message }, `a command that is not AMF0: ${(err as Error).message}`);
      return undefined;
    }
    this.log?.debug({ command: values[0] }, "RTMP command");
    const step = handleCommand(this.state, values, message.streamId, this.settings);
    this.apply(step);
    if (step.events.some((e) => e.kind === "publish")) return this.decide();
    if (step.events.some((e) => e.kind === "play")) return this.decidePlay();
    return undefined;
  }

  private apply(step: CommandStep): void {
    this.state = step.state;
    this.send(step.send);
    for (const event of step.events) {
      if (event.kind === "end") this.finish(event.reason);
      if (event.kind === "playEnd") this.finishPlay(event.cause);
    }
    if (step.close) this.closeAfterFlush();
  }

  private async decidePlay(): Promise<void> {
    const request = this.state.play!;
    let decision: PlayDecision;
    try {
      decision = this.options.onPlay
        ? await this.options.onPlay({ app: this.state.app, streamName: request.streamName, tcUrl: this.state.tcUrl, remoteAddress: this.remoteAddress, connection: this })
        : { ok: false, code: "NetStream.Play.Failed", description: "this server takes publishers only" };
    } catch (err) {
      this.log?.error({ err }, "RTMP play hook failed");
      decision = { ok: false, code: "NetStream.Play.Failed", description: "the server could not play the stream" };
    }
    this.log?.info({ app: this.state.app, stream: request.streamName, ok: decision.ok }, "RTMP play");
    if (decision.ok) {
      this.playReader = decision.reader;
      // A reader may sit idle for long between streams' media: only its socket closing ends it now.
      clearTimeout(this.timer);
    }
    this.apply(answerPlay(this.state, decision.ok ? { ok: true } : decision));
    // The player left while the caller decided: the reader it just made is told at once.
    if (decision.ok && this.state.phase !== "playing") return this.finishPlay("disconnected");
    if (!decision.ok) return;
    try {
      decision.reader.started?.();
    } catch (err) {
      this.log?.error({ err }, "RTMP play reader start failed");
      this.drop({ kind: "closed" }, "play reader start failed");
    }
  }

  /** Tells the play's reader of the end, once. */
  private finishPlay(cause: PlayEndCause | "disconnected"): void {
    const reader = this.playReader;
    if (this.state.phase !== "ended") this.state = { ...this.state, phase: "ended" };
    // A player that stopped but stays connected gets the same time as a new connection.
    if ((cause === "deleteStream" || cause === "closeStream") && !this.socket.destroyed) this.armTimer("nothing to do after the play ended");
    if (!reader) return;
    this.playReader = undefined;
    this.log?.info({ cause }, "RTMP play ended");
    try {
      reader.end();
    } catch (err) {
      this.log?.error({ err }, "RTMP play reader end failed");
    }
  }

  private async decide(): Promise<void> {
    const request = this.state.publish!;
    let decision: PublishDecision;
    try {
      decision = await this.options.onPublish({
        app: this.state.app,
        streamName: request.streamName,
        type: request.type,
        tcUrl: this.state.tcUrl,
        caps: this.state.caps,
        remoteAddress: this.remoteAddress,
        connection: this,
      });
    } catch (err) {
      this.log?.error({ err }, "RTMP publish hook failed");
      decision = { ok: false, code: "NetStream.Publish.Failed", description: "the server could not take the stream" };
    }
    if (decision.ok) {
      this.sink = decision.sink;
      clearTimeout(this.timer);
    }
    // A publish names its stream key, a secret: never logged.
    this.log?.info({ app: this.state.app, ok: decision.ok }, "RTMP publish");
    this.apply(answerPublish(this.state, decision.ok ? { ok: true } : decision));
  }

  private onMedia(message: RtmpMessage): Promise<void> | undefined {
    const publish = this.state.publish;
    if (this.state.phase !== "publishing" || !this.sink || message.streamId !== publish?.streamId) return undefined;
    let media: PublishedMedia | undefined;
    try {
      media = parseMedia(message);
    } catch (err) {
      // One malformed tag is the encoder's loss, not a reason to end its stream.
      this.log?.warn({ type: message.type, err: (err as Error).message }, "RTMP media message dropped");
      return undefined;
    }
    if (!media) return undefined;
    try {
      const pending = this.sink.media(media);
      return pending ? pending.catch((err: unknown) => this.listenerFailed(err)) : undefined;
    } catch (err) {
      this.listenerFailed(err);
      return undefined;
    }
  }

  private listenerFailed(err: unknown): void {
    this.log?.error({ err }, "RTMP media listener failed");
    this.drop({ kind: "protocol", message: `the media listener failed: ${(err as Error).message}` }, "media listener failed");
  }

  /** The socket closed: the publish under way (if any) ends, then `closed` resolves. */
  private onClosed(reason: PublishEndReason): undefined {
    this.finish(reason);
    this.finishPlay("disconnected");
    this.markClosed();
    return undefined;
  }

  /** Tells the sink of the end, once. */
  private finish(reason: PublishEndReason): void {
    if (this.state.phase !== "ended") this.state = { ...this.state, phase: "ended" };
    // A publisher that unpublished has no more to do here; one that stays gets the same time as a new connection.
    if (reason.kind === "unpublished" && !this.socket.destroyed) this.armTimer("nothing to do after the publish ended");
    if (!this.sink || this.endTold) return;
    this.endTold = true;
    this.log?.info({ reason }, "RTMP publish ended");
    try {
      this.sink.end(reason);
    } catch (err) {
      this.log?.error({ err }, "RTMP sink end failed");
    }
  }

  private armTimer(why: string): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.drop({ kind: "closed" }, why), this.timeoutMs);
  }

  /** Ends our side once what is written has gone out; destroys it if the peer does not hang up soon after. */
  private closeAfterFlush(): void {
    if (this.socket.destroyed) return;
    this.socket.end();
    setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  private send(items: Outgoing[]): void {
    if (items.length === 0 || this.socket.destroyed || !this.socket.writable) return;
    this.socket.cork();
    for (const item of items) this.socket.write(item.kind === "chunkSize" ? this.writer.setChunkSize(item.size) : this.writer.write(item.message));
    this.socket.uncork();
  }
}

/** An audio, video or data message as the listener gets it; undefined for a data message without a name. */
export function parseMedia(message: RtmpMessage): PublishedMedia | undefined {
  const { timestamp, payload: body } = message;
  if (message.type === RtmpType.video) return { kind: "video", timestamp, tag: readVideoTag(body), body };
  if (message.type === RtmpType.audio) return { kind: "audio", timestamp, tag: readAudioTag(body), body };
  // An AMF3 data message starts with one format byte, then AMF0 all the same.
  const values = decodeAmf0(message.type === RtmpType.amf3Data ? body.subarray(1) : body);
  if (values[0] === "@setDataFrame") values.shift();
  const [name] = values;
  return typeof name === "string" ? { kind: "data", timestamp, name, values: values.slice(1), body } : undefined;
}

/** Listens for publishers and players over TCP, or TLS (RTMPS) when given a key and certificate. */
export class RtmpServer {
  private readonly server: net.Server;
  private readonly connections = new Set<RtmpServerConnection>();

  constructor(options: RtmpServerOptions & { tls?: { key: string | Buffer; cert: string | Buffer } }) {
    const accept = (socket: net.Socket) => {
      const connection = new RtmpServerConnection(socket, options);
      this.connections.add(connection);
      void connection.closed.then(() => this.connections.delete(connection));
    };
    this.server = options.tls ? tls.createServer({ key: options.tls.key, cert: options.tls.cert }, accept) : net.createServer(accept);
    // A TLS handshake that fails is that client's problem, not the listener's.
    this.server.on("tlsClientError", (err: Error) => options.log?.debug({ err: err.message }, "RTMPS handshake failed"));
  }

  /** Starts listening; resolves with the port (useful with port 0). */
  listen(port: number, host?: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve((this.server.address() as net.AddressInfo).port);
      });
    });
  }

  /** The connections open now. */
  get openConnections(): number {
    return this.connections.size;
  }

  /**
   * Stops listening and closes every connection (their publishes end with reason "closed",
   * their plays' readers are told). Resolves once every sink and reader was told, which waits
   * for a media promise still pending.
   */
  /** Takes no new connection; those open go on until close(). */
  stopListening(): void {
    if (this.server.listening) this.server.close();
  }

  async close(): Promise<void> {
    // Resolves on the listener's end, or at once (with an error it does not need) if it had stopped.
    const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const open = [...this.connections];
    for (const c of open) c.close();
    await Promise.all([closing, ...open.map((c) => c.closed)]);
  }
}
