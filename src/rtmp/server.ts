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
  answerPublish,
  handleCommand,
  initialServerState,
  reconnectRequest,
  type CommandStep,
  type Outgoing,
  type PublishEndReason,
  type ServerSessionState,
  type ServerSettings,
} from "./serverCommands";

// The socket side of onair's RTMP server: one RtmpServerConnection per accepted socket (the
// handshake, the chunk streams, acknowledgements, pings, the caller's publish decision, media
// to a listener), and RtmpServer, which listens on TCP or TLS. What each command means is
// decided by serverCommands.ts, which knows no socket.
//
// Backpressure: the caller's publish hook and its media listener may return a promise; until it
// settles the connection reads nothing more from the socket (TCP then slows the publisher).
// Messages are handled strictly one after the other through one queue, so the same mechanism
// keeps commands, media and the end in arrival order: a listener never sees media after the end,
// nor the end of a publish whose decision is still pending.

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

export interface RtmpServerOptions {
  /** Whether a publish may go on; on ok, the sink takes its media. A throw counts as NetStream.Publish.Failed. */
  onPublish(request: PublishRequest): Promise<PublishDecision>;
  log?: Logger;
  /** A connection that has not had a publish accepted within this is dropped. 10 s unless set. */
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
    this.armTimer(`no publish within ${this.timeoutMs} ms`);
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

  /** Asks an E-RTMP publisher to reconnect (to `tcUrl`, or the same server); false when its connect did not say it can, or it is gone. */
  requestReconnect(tcUrl?: string, description?: string): boolean {
    const request = reconnectRequest(this.state, tcUrl, description);
    if (!request || this.socket.destroyed) return false;
    this.send([request]);
    return true;
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
    const publish = step.events.find((e) => e.kind === "publish");
    return publish ? this.decide() : undefined;
  }

  private apply(step: CommandStep): void {
    this.state = step.state;
    this.send(step.send);
    for (const event of step.events) if (event.kind === "end") this.finish(event.reason);
    if (step.close) this.closeAfterFlush();
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
    this.log?.info({ app: this.state.app, stream: request.streamName, ok: decision.ok }, "RTMP publish");
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

/** Listens for publishers over TCP, or TLS (RTMPS) when given a key and certificate. */
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
   * Stops listening and closes every connection (their publishes end with reason "closed").
   * Resolves once every sink was told, which waits for a media promise still pending.
   */
  async close(): Promise<void> {
    const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const open = [...this.connections];
    for (const c of open) c.close();
    await Promise.all([closing, ...open.map((c) => c.closed)]);
  }
}
