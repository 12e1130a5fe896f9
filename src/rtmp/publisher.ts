import crypto from "node:crypto";
import net from "node:net";
import tls from "node:tls";
import { amf0Text, decodeAmf0, encodeAmf0, isAmf0Object, type Amf0Value } from "./amf0";
import { ChunkReader, ChunkWriter, controlMessage, pingResponse, RtmpType, type RtmpMessage } from "./chunks";
import { FlvTagType, type FlvTag } from "./flv";
import { ClientHandshake, helloPacket } from "./handshake";

// An RTMP(S) publisher over node:net / node:tls: the handshake, connect, releaseStream,
// FCPublish, createStream and publish, as FMLE and OBS send them, then FLV tags as RTMP
// messages. It connects to the address it is given (already checked by the caller), never to
// a name it would resolve itself.

/** Where to publish. */
export interface RtmpDestination {
  /** An IP address: connected to as is, no DNS lookup. */
  address: string;
  port: number;
  /** rtmps: TLS, with SNI and the certificate's name checked against `servername` (the url's host name; undefined for an IP). */
  tls?: { servername: string | undefined; verify: boolean; ca?: string | Buffer };
  app: string;
  streamName: string;
  /** `rtmp://host:port/app`, as the destination routes on it. */
  tcUrl: string;
}

export interface RtmpPublisherOptions {
  /** Bounds each step of the set-up, and a write that makes no progress while streaming. 10 s unless set. */
  timeoutMs?: number;
  /** Over this many bytes waiting in the socket, send() says stop until drained(). 512 KiB unless set. */
  maxBufferedBytes?: number;
  /** The chunk size this client sends with. 4096 unless set, as OBS. */
  chunkSize?: number;
  /** Aborts the set-up (publish() rejects at once) or the connection. */
  signal?: AbortSignal;
}

export type RtmpErrorKind =
  /** TCP connection refused. */
  | "refused"
  | "unreachable"
  /** No answer within the timeout, or a write that made no progress. */
  | "timeout"
  | "tls-certificate"
  | "tls"
  /** The peer closed or reset the connection. */
  | "closed"
  /** The server refused connect, createStream or publish (or failed the stream later). */
  | "rejected"
  /** The peer sent what is not RTMP. */
  | "protocol";

/** How far the publisher got: connecting, the RTMP handshake, the commands up to publish, or media. */
export type RtmpStage = "connect" | "handshake" | "publish" | "streaming";

export class RtmpError extends Error {
  override readonly name = "RtmpError";
  constructor(
    readonly kind: RtmpErrorKind,
    message: string,
    readonly stage: RtmpStage,
    /** What the server said, when it refused: its status code (`NetStream.Publish.BadName`) and description. */
    readonly status?: { code: string; description: string },
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * `/app/streamName?query` → app and stream name, split as ffmpeg splits them (libavformat
 * rtmpproto.c): a path of two parts is app/name; of three or more, the first two are the app
 * (`app/instance`) unless the second holds a colon (`app/mp4:name`). The query stays with the
 * name (Facebook's keys carry `?s_bl=…`).
 */
export function splitRtmpPath(path: string): { app: string; streamName: string } {
  const q = path.indexOf("?");
  const query = q >= 0 ? path.slice(q) : "";
  const parts = (q >= 0 ? path.slice(0, q) : path).replace(/^\//, "").split("/");
  if (parts.length <= 2 || parts[1]!.includes(":")) return { app: parts[0]!, streamName: parts.slice(1).join("/") + query };
  return { app: `${parts[0]}/${parts[1]}`, streamName: parts.slice(2).join("/") + query };
}

const CSID_COMMAND = 3;
const CSID_AUDIO = 4;
const CSID_DATA = 5;
const CSID_VIDEO = 6;
const FLASH_VER = "FMLE/3.0 (compatible; onair)";
/** Node's TLS verification failures (OpenSSL's X509 codes and Node's name check). */
const CERTIFICATE_ERRORS = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|HOSTNAME_MISMATCH|ALTNAME/;

interface CommandResult {
  ok: boolean;
  /** The values after the transaction id: command object, then info or the stream id. */
  values: Amf0Value[];
}

export class RtmpPublisher {
  /** Resolves once the connection is closed: with why, unless it was closed on purpose (finish, close) before anything failed. */
  readonly ended: Promise<RtmpError | undefined>;
  /** Resolves once the first audio or video message has been handed to the network. */
  readonly mediaSent: Promise<void>;
  private readonly socket: net.Socket;
  private readonly timeoutMs: number;
  private readonly maxBuffered: number;
  private readonly chunkSize: number;
  private handshake: ClientHandshake | undefined;
  /** A server sends a publisher commands and control messages only: a few kB each. */
  private readonly reader = new ChunkReader({ maxMessageSize: 64 * 1024, maxPartialBytes: 256 * 1024 });
  private readonly writer = new ChunkWriter();
  private readonly results = new Map<number, CommandResult>();
  private readonly statuses: { level: string; code: string; description: string }[] = [];
  private readonly waiters = new Set<() => void>();
  private stage: RtmpStage = "connect";
  private streamId = 0;
  private failure: RtmpError | undefined;
  private closing = false;
  private isClosed = false;
  private nextTransaction = 1;
  /** Bytes received from the first (handshake included, as librtmp counts), for acknowledgements. */
  private bytesReceived = 0;
  private lastAcknowledged = 0;
  private ackWindow = 0;
  private announcedWindow = 0;
  /** Writes handed to the socket whose callback has not come, and when one last did. */
  private outstanding = 0;
  private lastProgressAt = 0;
  private watchdog: NodeJS.Timeout | undefined;
  private markMediaSent!: () => void;
  private mediaSentYet = false;

  private constructor(
    readonly destination: RtmpDestination,
    options: RtmpPublisherOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxBuffered = options.maxBufferedBytes ?? 512 * 1024;
    this.chunkSize = options.chunkSize ?? 4096;
    this.mediaSent = new Promise((resolve) => (this.markMediaSent = resolve));
    const d = destination;
    this.socket = d.tls
      ? tls.connect({
          host: d.address,
          port: d.port,
          // RFC 6066: SNI names a host, never an address.
          ...(d.tls.servername && net.isIP(d.tls.servername) === 0 ? { servername: d.tls.servername } : {}),
          rejectUnauthorized: d.tls.verify,
          ...(d.tls.ca ? { ca: d.tls.ca } : {}),
        })
      : net.connect({ host: d.address, port: d.port });
    this.socket.setNoDelay(true);
    this.ended = new Promise((resolve) =>
      this.socket.once("close", () => {
        this.isClosed = true;
        clearInterval(this.watchdog);
        if (!this.closing && !this.failure) this.failure = this.closedError();
        this.notify();
        resolve(this.failure);
      }),
    );
    this.socket.on("error", (err) => this.fail(this.socketError(err)));
    this.socket.on("data", (data: Buffer) => this.onData(data));
    this.socket.once(d.tls ? "secureConnect" : "connect", () => this.onConnected());
  }

  /**
   * Connects and publishes: resolves once the server answered NetStream.Publish.Start; rejects
   * with an RtmpError (refused, unreachable, timeout, TLS, closed, rejected with the server's
   * status) and leaves nothing open.
   */
  static async publish(destination: RtmpDestination, options: RtmpPublisherOptions = {}): Promise<RtmpPublisher> {
    const p = new RtmpPublisher(destination, options);
    const abort = () => p.close();
    options.signal?.addEventListener("abort", abort, { once: true });
    if (options.signal?.aborted) p.close();
    try {
      await p.open();
      return p;
    } catch (err) {
      p.close();
      throw err instanceof RtmpError ? err : new RtmpError("protocol", String(err), p.stage, undefined, { cause: err });
    } finally {
      options.signal?.removeEventListener("abort", abort);
    }
  }

  /** Bytes waiting to go out. */
  get buffered(): number {
    return this.socket.writableLength;
  }

  /**
   * Sends one FLV tag as the RTMP message it stands for: audio, video, or script data
   * (onMetaData goes as `@setDataFrame`, as encoders send it). Returns false when the socket
   * holds more than the bound: the caller stops reading its source until drained().
   */
  sendTag(tag: FlvTag): boolean {
    if (this.isClosed || this.closing) return true;
    const base = { streamId: this.streamId, timestamp: tag.timestamp >>> 0 };
    if (tag.type === FlvTagType.audio) this.send({ ...base, csid: CSID_AUDIO, type: RtmpType.audio, payload: tag.data }, true);
    else if (tag.type === FlvTagType.video) this.send({ ...base, csid: CSID_VIDEO, type: RtmpType.video, payload: tag.data }, true);
    else if (tag.type === FlvTagType.script) {
      const payload = isOnMetaData(tag.data) ? Buffer.concat([encodeAmf0(["@setDataFrame"]), tag.data]) : tag.data;
      this.send({ ...base, csid: CSID_DATA, type: RtmpType.amf0Data, payload }, false);
    }
    return this.socket.writableLength <= this.maxBuffered;
  }

  /** Several tags in one write to the network (the tags one read of the source completed). Returns as sendTag does. */
  sendTags(tags: readonly FlvTag[]): boolean {
    this.socket.cork();
    try {
      for (const tag of tags) this.sendTag(tag);
    } finally {
      this.socket.uncork();
    }
    return this.socket.writableLength <= this.maxBuffered;
  }

  /** Resolves when the socket has room again (or is closed). */
  drained(): Promise<void> {
    if (this.isClosed || this.socket.writableLength <= this.maxBuffered) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.socket.off("drain", done);
        this.socket.off("close", done);
        resolve();
      };
      this.socket.on("drain", done).on("close", done);
    });
  }

  /**
   * The source ended: what is buffered goes out, then FCUnpublish and deleteStream, and the
   * connection is closed. Bounded by `graceMs`; resolves once closed.
   */
  async finish(graceMs = 5000): Promise<void> {
    if (this.isClosed) return;
    if (!this.closing) {
      this.closing = true;
      const name = this.destination.streamName;
      this.command(["FCUnpublish", this.nextTransaction++, null, name], 0);
      this.command(["deleteStream", this.nextTransaction++, null, this.streamId], 0);
      this.socket.end();
    }
    const timer = setTimeout(() => this.socket.destroy(), graceMs);
    await this.ended;
    clearTimeout(timer);
  }

  /** Drops the connection at once; idempotent. */
  close(): void {
    this.closing = true;
    this.socket.destroy();
  }

  private async open(): Promise<void> {
    await this.waitFor("connection", () => (this.stage !== "connect" ? true : undefined));
    await this.waitFor("RTMP handshake", () => (this.handshake === undefined ? true : undefined));
    this.stage = "publish";
    this.socket.write(this.writer.setChunkSize(this.chunkSize));
    const d = this.destination;
    const connect = await this.call("connect", { app: d.app, type: "nonprivate", flashVer: FLASH_VER, tcUrl: d.tcUrl });
    if (!connect.ok) throw this.refusal("connect", connect.values[1]);
    // Twitch, YouTube and nginx-rtmp expect these two before createStream; their answers (or
    // _error: "no such stream") change nothing.
    this.command(["releaseStream", this.nextTransaction++, null, d.streamName], 0);
    this.command(["FCPublish", this.nextTransaction++, null, d.streamName], 0);
    const created = await this.call("createStream", null);
    const streamId = created.values[1];
    if (!created.ok || typeof streamId !== "number") throw this.refusal("createStream", created.values[1]);
    this.streamId = streamId;
    const seen = this.statuses.length;
    // spec 7.2.2.6: transaction id 0, a null command object, on the stream's message stream.
    this.command(["publish", 0, null, d.streamName, "live"], this.streamId);
    await this.waitFor("answer to publish", () => {
      for (const s of this.statuses.slice(seen)) {
        if (s.code === "NetStream.Publish.Start") return true;
        if (s.level === "error" || /Publish\.(BadName|Denied|Failed)|Rejected|Auth/i.test(s.code)) {
          throw new RtmpError("rejected", `publish refused: ${s.code}${s.description ? ` (${s.description})` : ""}`, "publish", s);
        }
      }
      return undefined;
    });
    this.stage = "streaming";
    this.lastProgressAt = Date.now();
    this.watchdog = setInterval(() => this.checkProgress(), Math.min(1000, this.timeoutMs));
    this.watchdog.unref();
  }

  private onConnected(): void {
    this.stage = "handshake";
    this.handshake = new ClientHandshake(helloPacket(0, (n) => crypto.randomBytes(n)));
    this.socket.write(this.handshake.start());
    this.notify();
  }

  /** A write that has waited for the network for `timeoutMs`: the destination stopped reading (ffmpeg's -rw_timeout). */
  private checkProgress(): void {
    if (this.outstanding > 0 && Date.now() - this.lastProgressAt >= this.timeoutMs) {
      this.fail(new RtmpError("timeout", `the destination took no data for ${Math.round(this.timeoutMs / 1000)} s`, "streaming"));
    }
  }

  private refusal(command: string, info: Amf0Value | undefined): RtmpError {
    const code = amf0Text(info, "code");
    const description = amf0Text(info, "description");
    const said = [code, description].filter((x) => x).join(": ") || "no reason given";
    return new RtmpError("rejected", `${command} refused: ${said}`, "publish", { code, description });
  }

  /** Sends a command expecting _result or _error, and waits for that. */
  private async call(name: string, commandObject: Amf0Value): Promise<CommandResult> {
    const id = this.nextTransaction++;
    this.command([name, id, commandObject], 0);
    return this.waitFor(`answer to ${name}`, () => this.results.get(id));
  }

  private command(values: Amf0Value[], streamId: number): void {
    this.send({ csid: CSID_COMMAND, type: RtmpType.amf0Command, streamId, timestamp: 0, payload: encodeAmf0(values) }, false);
  }

  private send(message: RtmpMessage, media: boolean): void {
    if (this.isClosed || this.socket.destroyed) return;
    if (this.outstanding === 0) this.lastProgressAt = Date.now();
    this.outstanding++;
    this.socket.write(this.writer.write(message), (err) => {
      this.outstanding--;
      this.lastProgressAt = Date.now();
      if (!err && media && !this.mediaSentYet) {
        this.mediaSentYet = true;
        this.markMediaSent();
      }
    });
  }

  /**
   * Resolves with the first value `check` gives other than undefined, checked now and after
   * everything the connection does; rejects when `check` throws, the connection fails, or
   * after the timeout.
   */
  private waitFor<T>(what: string, check: () => T | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(attempt);
        const host = this.destination.tls?.servername ?? this.destination.address;
        reject(new RtmpError("timeout", `no ${what} from ${host}:${this.destination.port} within ${Math.round(this.timeoutMs / 1000)} s`, this.stage));
      }, this.timeoutMs);
      const attempt = () => {
        try {
          if (this.failure) throw this.failure;
          if (this.isClosed || this.closing) throw new RtmpError("closed", "the connection was closed", this.stage);
          const value = check();
          if (value === undefined) return;
          clearTimeout(timer);
          this.waiters.delete(attempt);
          resolve(value);
        } catch (err) {
          clearTimeout(timer);
          this.waiters.delete(attempt);
          reject(err as Error);
        }
      };
      this.waiters.add(attempt);
      attempt();
    });
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /** The first failure is the one reported; the connection closes with it. */
  private fail(err: RtmpError): void {
    if (!this.failure && !this.closing) this.failure = err;
    this.socket.destroy();
    this.notify();
  }

  private onData(data: Buffer): void {
    this.bytesReceived += data.length;
    try {
      if (this.handshake) {
        const step = this.handshake.push(data);
        if (step.send) this.socket.write(step.send);
        if (!step.done) return;
        this.handshake = undefined;
        data = step.rest!;
      }
      for (const message of this.reader.push(data)) this.onMessage(message);
      if (this.ackWindow > 0 && this.bytesReceived - this.lastAcknowledged >= this.ackWindow) {
        this.lastAcknowledged = this.bytesReceived;
        this.send(controlMessage(RtmpType.acknowledgement, this.bytesReceived), false);
      }
    } catch (err) {
      this.fail(new RtmpError("protocol", `the destination sent what is not RTMP: ${(err as Error).message}`, this.stage, undefined, { cause: err }));
      return;
    }
    this.notify();
  }

  private onMessage(message: RtmpMessage): void {
    const { payload } = message;
    switch (message.type) {
      case RtmpType.windowAckSize:
        if (payload.length >= 4) this.ackWindow = payload.readUInt32BE(0);
        break;
      case RtmpType.setPeerBandwidth: {
        // spec 5.4.5: answered with a Window Acknowledgement Size when it differs from the last sent.
        const size = payload.length >= 4 ? payload.readUInt32BE(0) : 0;
        if (size > 0 && size !== this.announcedWindow) {
          this.announcedWindow = size;
          this.send(controlMessage(RtmpType.windowAckSize, size), false);
        }
        break;
      }
      case RtmpType.userControl: {
        const pong = pingResponse(message);
        if (pong) this.send(pong, false);
        break;
      }
      case RtmpType.amf0Command:
      case RtmpType.amf3Command:
        // An AMF3 command message starts with one format byte, then AMF0 all the same.
        this.onCommand(decodeAmf0(message.type === RtmpType.amf3Command ? payload.subarray(1) : payload));
        break;
    }
  }

  private onCommand(values: Amf0Value[]): void {
    const [name, transaction, ...rest] = values;
    if ((name === "_result" || name === "_error") && typeof transaction === "number") {
      this.results.set(transaction, { ok: name === "_result", values: rest });
    } else if (name === "onStatus" && isAmf0Object(rest[1])) {
      const status = { level: amf0Text(rest[1], "level"), code: amf0Text(rest[1], "code"), description: amf0Text(rest[1], "description") };
      this.statuses.push(status);
      if (this.stage === "streaming" && status.level === "error") {
        this.fail(new RtmpError("rejected", `the destination ended the stream: ${status.code}${status.description ? ` (${status.description})` : ""}`, "streaming", status));
      }
    }
  }

  private socketError(err: NodeJS.ErrnoException): RtmpError {
    const code = err.code ?? "";
    const where = `${this.destination.tls?.servername ?? this.destination.address}:${this.destination.port}`;
    if (code === "ECONNREFUSED") return new RtmpError("refused", `connection refused by ${where}`, this.stage, undefined, { cause: err });
    if (["EHOSTUNREACH", "ENETUNREACH", "EHOSTDOWN", "ENETDOWN"].includes(code)) return new RtmpError("unreachable", `${where} is unreachable`, this.stage, undefined, { cause: err });
    if (code === "ETIMEDOUT") return new RtmpError("timeout", `no answer from ${where}`, this.stage, undefined, { cause: err });
    if (this.destination.tls && this.stage === "connect") {
      if (CERTIFICATE_ERRORS.test(code)) return new RtmpError("tls-certificate", `the TLS certificate of ${where} failed verification: ${err.message}`, this.stage, undefined, { cause: err });
      return new RtmpError("tls", `TLS handshake with ${where} failed: ${err.message}`, this.stage, undefined, { cause: err });
    }
    return new RtmpError("closed", `${where} closed the connection (${code || err.message})`, this.stage, undefined, { cause: err });
  }

  private closedError(): RtmpError {
    const where = `${this.destination.tls?.servername ?? this.destination.address}:${this.destination.port}`;
    if (this.destination.tls && this.stage === "connect") return new RtmpError("tls", `TLS handshake with ${where} failed: the connection closed`, this.stage);
    return new RtmpError("closed", `${where} closed the connection`, this.stage);
  }
}

/** A script tag whose first value is the string "onMetaData". */
function isOnMetaData(data: Buffer): boolean {
  // 0x02, a 16-bit length of 10, "onMetaData"
  return data.length >= 13 && data[0] === 0x02 && data.readUInt16BE(1) === 10 && data.toString("latin1", 3, 13) === "onMetaData";
}
