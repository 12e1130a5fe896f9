// A minimal RTMP publisher for tests, on node:net only. ffmpeg's log does not reliably show
// which onStatus a refused publisher received, nor its description; this client records every
// one. It speaks just enough RTMP to publish: the simple handshake (servers take it from
// publishers without a digest), AMF0 commands, and the protocol control and user control messages a server may send
// a publisher (chunk size, acknowledgement window, peer bandwidth, pings). Sections, in order:
// AMF0, chunk stream, the publisher, FLV tag bodies.
//
// It does not reuse src/rtmp on purpose: it is the independent peer onair's RTMP code is tested
// against (the ingest now, onair's own RTMP server later), so a mistake in src/rtmp's codecs
// cannot be made on both sides of a test and pass.

import net from "node:net";

// ─── AMF0 (spec: AMF0 File Format Specification, section 2) ────────────────────────────────

export type Amf0Value = number | boolean | string | null | undefined | Date | Amf0Value[] | Amf0EcmaArray | { [key: string]: Amf0Value };

/** Encoded as an AMF0 ECMA array (marker 0x08), which onMetaData uses; decoded back as a plain object. */
export class Amf0EcmaArray {
  constructor(readonly entries: { [key: string]: Amf0Value }) {}
}

const AMF0 = { number: 0x00, boolean: 0x01, string: 0x02, object: 0x03, null: 0x05, undefined: 0x06, ecmaArray: 0x08, objectEnd: 0x09, strictArray: 0x0a, date: 0x0b, longString: 0x0c } as const;

function amf0Key(key: string): Buffer {
  const bytes = Buffer.from(key, "utf8");
  const length = Buffer.alloc(2);
  length.writeUInt16BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

function amf0Properties(entries: { [key: string]: Amf0Value }): Buffer[] {
  const parts: Buffer[] = [];
  for (const [key, value] of Object.entries(entries)) parts.push(amf0Key(key), encodeAmf0Value(value));
  parts.push(Buffer.from([0x00, 0x00, AMF0.objectEnd]));
  return parts;
}

function encodeAmf0Value(value: Amf0Value): Buffer {
  if (value === null) return Buffer.from([AMF0.null]);
  if (value === undefined) return Buffer.from([AMF0.undefined]);
  if (typeof value === "number") {
    const out = Buffer.alloc(9);
    out[0] = AMF0.number;
    out.writeDoubleBE(value, 1);
    return out;
  }
  if (typeof value === "boolean") return Buffer.from([AMF0.boolean, value ? 1 : 0]);
  if (typeof value === "string") {
    const bytes = Buffer.from(value, "utf8");
    if (bytes.length <= 0xffff) return Buffer.concat([Buffer.from([AMF0.string]), amf0Key(value)]);
    const header = Buffer.alloc(5);
    header[0] = AMF0.longString;
    header.writeUInt32BE(bytes.length, 1);
    return Buffer.concat([header, bytes]);
  }
  if (value instanceof Date) {
    const out = Buffer.alloc(11); // the last two bytes are the time zone, which must be 0
    out[0] = AMF0.date;
    out.writeDoubleBE(value.getTime(), 1);
    return out;
  }
  if (Array.isArray(value)) {
    const header = Buffer.alloc(5);
    header[0] = AMF0.strictArray;
    header.writeUInt32BE(value.length, 1);
    return Buffer.concat([header, ...value.map(encodeAmf0Value)]);
  }
  if (value instanceof Amf0EcmaArray) {
    const header = Buffer.alloc(5);
    header[0] = AMF0.ecmaArray;
    header.writeUInt32BE(Object.keys(value.entries).length, 1);
    return Buffer.concat([header, ...amf0Properties(value.entries)]);
  }
  return Buffer.concat([Buffer.from([AMF0.object]), ...amf0Properties(value)]);
}

/** The AMF0 encoding of a command or data message's values, one after the other. */
export function encodeAmf0(values: Amf0Value[]): Buffer {
  return Buffer.concat(values.map(encodeAmf0Value));
}

class Amf0Reader {
  private at = 0;
  constructor(private readonly buf: Buffer) {}

  get done(): boolean {
    return this.at >= this.buf.length;
  }

  private need(n: number): void {
    if (this.at + n > this.buf.length) throw new Error(`AMF0: truncated value at byte ${this.at}`);
  }

  private u8(): number {
    this.need(1);
    return this.buf.readUInt8(this.at++);
  }

  private u16(): number {
    this.need(2);
    this.at += 2;
    return this.buf.readUInt16BE(this.at - 2);
  }

  private u32(): number {
    this.need(4);
    this.at += 4;
    return this.buf.readUInt32BE(this.at - 4);
  }

  private double(): number {
    this.need(8);
    this.at += 8;
    return this.buf.readDoubleBE(this.at - 8);
  }

  private utf8(length: number): string {
    this.need(length);
    this.at += length;
    return this.buf.toString("utf8", this.at - length, this.at);
  }

  /** Key/value pairs up to the empty key and the object-end marker. */
  private properties(): { [key: string]: Amf0Value } {
    const out: { [key: string]: Amf0Value } = {};
    for (;;) {
      const key = this.utf8(this.u16());
      if (key === "" && this.buf[this.at] === AMF0.objectEnd) {
        this.at++;
        return out;
      }
      out[key] = this.value();
    }
  }

  value(): Amf0Value {
    const marker = this.u8();
    switch (marker) {
      case AMF0.number:
        return this.double();
      case AMF0.boolean:
        return this.u8() !== 0;
      case AMF0.string:
        return this.utf8(this.u16());
      case AMF0.longString:
        return this.utf8(this.u32());
      case AMF0.object:
        return this.properties();
      case AMF0.null:
        return null;
      case AMF0.undefined:
        return undefined;
      case AMF0.ecmaArray:
        this.u32(); // the count is a hint only: the entries end with the object-end marker
        return this.properties();
      case AMF0.strictArray: {
        const count = this.u32();
        const out: Amf0Value[] = [];
        for (let i = 0; i < count; i++) out.push(this.value());
        return out;
      }
      case AMF0.date: {
        const ms = this.double();
        this.u16();
        return new Date(ms);
      }
      default:
        throw new Error(`AMF0: unsupported marker 0x${marker.toString(16)} at byte ${this.at - 1}`);
    }
  }
}

/** All the AMF0 values of a command or data message. */
export function decodeAmf0(buf: Buffer): Amf0Value[] {
  const reader = new Amf0Reader(buf);
  const values: Amf0Value[] = [];
  while (!reader.done) values.push(reader.value());
  return values;
}

// ─── Chunk stream (spec: Adobe RTMP 1.0, section 5.3) ──────────────────────────────────────

/** Message type ids (spec 5.4, 6.2, 7.1). */
export const RtmpType = {
  setChunkSize: 1,
  abort: 2,
  acknowledgement: 3,
  userControl: 4,
  windowAckSize: 5,
  setPeerBandwidth: 6,
  audio: 8,
  video: 9,
  amf3Data: 15,
  amf3Command: 17,
  amf0Data: 18,
  amf0Command: 20,
} as const;

/** One whole RTMP message, reassembled from its chunks. */
export interface RtmpMessage {
  /** Chunk stream id: 2 for protocol control; the sender chooses the rest. */
  csid: number;
  type: number;
  /** Message stream id: 0 for the connection, the id createStream returned for a stream. */
  streamId: number;
  /** Absolute, in ms (32 bits). */
  timestamp: number;
  payload: Buffer;
}

const DEFAULT_CHUNK_SIZE = 128; // spec 5.4.1: until a Set Chunk Size says otherwise
const MESSAGE_HEADER_SIZE = [11, 7, 3, 0] as const;
const EXTENDED = 0xffffff;

function basicHeader(fmt: number, csid: number): Buffer {
  if (csid < 2 || csid > 65599) throw new Error(`chunk stream id ${csid} is out of range`);
  if (csid < 64) return Buffer.from([(fmt << 6) | csid]);
  if (csid < 320) return Buffer.from([fmt << 6, csid - 64]);
  return Buffer.from([(fmt << 6) | 1, (csid - 64) & 0xff, (csid - 64) >> 8]);
}

/**
 * A message as chunks of at most `chunkSize` payload bytes: a type 0 chunk (absolute
 * timestamp, so no chunk stream state is relied on), then type 3 continuations. A timestamp
 * of 0xffffff or more goes in the extended timestamp field, repeated on each continuation
 * (spec 5.3.1.3, and what node-media-server and librtmp expect).
 */
export function encodeChunks(message: RtmpMessage, chunkSize: number): Buffer {
  const { payload, timestamp } = message;
  if (!Number.isInteger(timestamp) || timestamp < 0 || timestamp > 0xffffffff) throw new Error(`timestamp ${timestamp} is not a 32-bit ms value`);
  if (payload.length > 0xffffff) throw new Error(`a message of ${payload.length} bytes does not fit RTMP's 24-bit length`);
  const extended = timestamp >= EXTENDED;
  const extendedField = Buffer.alloc(extended ? 4 : 0);
  if (extended) extendedField.writeUInt32BE(timestamp);
  const header = Buffer.alloc(11);
  header.writeUIntBE(extended ? EXTENDED : timestamp, 0, 3);
  header.writeUIntBE(payload.length, 3, 3);
  header.writeUInt8(message.type, 6);
  header.writeUInt32LE(message.streamId, 7); // spec 5.3.1.2.1: the only little-endian field
  const parts = [basicHeader(0, message.csid), header, extendedField];
  const continuation = Buffer.concat([basicHeader(3, message.csid), extendedField]);
  for (let at = 0; at < payload.length; at += chunkSize) {
    if (at > 0) parts.push(continuation);
    parts.push(payload.subarray(at, at + chunkSize));
  }
  return Buffer.concat(parts);
}

/** What a chunk stream remembers between chunks, for the headers that omit fields. */
interface ChunkStreamState {
  timestamp: number;
  /** Added for a type 3 chunk that starts a message; after a type 0 chunk, its timestamp (spec 5.3.1.2.4). */
  delta: number;
  length: number;
  type: number;
  streamId: number;
  /** Its last type 0–2 header had an extended timestamp, so its type 3 chunks carry one too. */
  extended: boolean;
  /** The message being reassembled, if one is under way. */
  partial?: { payload: Buffer; received: number };
}

/**
 * Reassembles messages from the bytes a peer sends after the handshake, in any slicing. Set
 * Chunk Size and Abort take effect here, at once, since the very next chunk may depend on them.
 */
export class ChunkStreamReader {
  private chunkSize = DEFAULT_CHUNK_SIZE;
  private pending: Buffer = Buffer.alloc(0);
  private readonly streams = new Map<number, ChunkStreamState>();

  /** The peer's chunk size now. */
  get incomingChunkSize(): number {
    return this.chunkSize;
  }

  /** The messages completed by `data`; throws on a protocol violation. */
  push(data: Buffer): RtmpMessage[] {
    this.pending = this.pending.length === 0 ? data : Buffer.concat([this.pending, data]);
    const messages: RtmpMessage[] = [];
    let at = 0;
    for (;;) {
      const used = this.readChunk(at, messages);
      if (used === 0) break;
      at += used;
    }
    this.pending = Buffer.from(this.pending.subarray(at));
    return messages;
  }

  /** Reads one chunk at `at` if it is all there: its length, or 0 (nothing changed) if not yet. */
  private readChunk(at: number, messages: RtmpMessage[]): number {
    const buf = this.pending;
    const available = buf.length - at;
    if (available < 1) return 0;
    const first = buf.readUInt8(at);
    const fmt = first >> 6;
    let csid = first & 0x3f;
    let pos = at + 1;
    if (csid === 0 || csid === 1) {
      const extra = csid === 0 ? 1 : 2;
      if (available < 1 + extra) return 0;
      csid = csid === 0 ? 64 + buf.readUInt8(pos) : 64 + buf.readUInt8(pos) + buf.readUInt8(pos + 1) * 256;
      pos += extra;
    }
    const headerSize = MESSAGE_HEADER_SIZE[fmt as 0 | 1 | 2 | 3];
    if (buf.length < pos + headerSize) return 0;
    const previous = this.streams.get(csid);
    if (fmt !== 0 && !previous) throw new Error(`RTMP: a type ${fmt} chunk on chunk stream ${csid}, which has had no type 0 chunk`);
    const timestampField = fmt <= 2 ? buf.readUIntBE(pos, 3) : undefined;
    const length = fmt <= 1 ? buf.readUIntBE(pos + 3, 3) : previous!.length;
    const type = fmt <= 1 ? buf.readUInt8(pos + 6) : previous!.type;
    const streamId = fmt === 0 ? buf.readUInt32LE(pos + 7) : previous!.streamId;
    pos += headerSize;
    const extended = timestampField !== undefined ? timestampField === EXTENDED : previous!.extended;
    if (extended && buf.length < pos + 4) return 0;
    const timestampValue = extended ? buf.readUInt32BE(pos) : timestampField;
    if (extended) pos += 4;

    const partial = previous?.partial;
    if (partial && fmt !== 3) throw new Error(`RTMP: a type ${fmt} chunk on chunk stream ${csid} in the middle of a message`);
    const received = partial?.received ?? 0;
    const size = Math.min(this.chunkSize, length - received);
    if (buf.length < pos + size) return 0;

    // The chunk is all there: only now does the chunk stream's state change.
    let state: ChunkStreamState;
    if (partial) state = previous!;
    else {
      const base = previous ?? { timestamp: 0, delta: 0 };
      const delta = fmt === 3 ? base.delta : timestampValue!;
      const timestamp = fmt === 0 ? timestampValue! : (base.timestamp + delta) >>> 0;
      state = { timestamp, delta, length, type, streamId, extended, partial: { payload: Buffer.alloc(length), received: 0 } };
      this.streams.set(csid, state);
    }
    const message = state.partial!;
    buf.copy(message.payload, message.received, pos, pos + size);
    message.received += size;
    if (message.received === length) {
      state.partial = undefined;
      this.onMessage({ csid, type, streamId, timestamp: state.timestamp, payload: message.payload }, messages);
    }
    return pos + size - at;
  }

  private onMessage(message: RtmpMessage, messages: RtmpMessage[]): void {
    if (message.type === RtmpType.setChunkSize) {
      const size = message.payload.readUInt32BE(0) & 0x7fffffff; // spec 5.4.1: the top bit must be 0
      if (size < 1) throw new Error("RTMP: Set Chunk Size 0");
      this.chunkSize = size;
    } else if (message.type === RtmpType.abort) {
      const state = this.streams.get(message.payload.readUInt32BE(0));
      if (state) state.partial = undefined;
    }
    messages.push(message);
  }
}

// ─── The publisher ─────────────────────────────────────────────────────────────────────────

/** An onStatus a server sent (its info object's level, code and description). */
export interface RtmpStatus {
  level: string;
  code: string;
  description: string;
  closed?: undefined;
}

/** The socket closed before the status waited for. */
export interface RtmpClosed {
  closed: true;
}

export interface RtmpPublisherOptions {
  /** Limit for connect() as a whole, and the default for publish() and nextStatus(). 5000 unless set. */
  timeoutMs?: number;
  /** The chunk size this client sends with (announced by Set Chunk Size). 4096 unless set, like OBS. */
  chunkSize?: number;
  /** The connect command's flashVer. */
  flashVer?: string;
  /** E-RTMP capsEx in the connect command (1: reconnect requests); left out unless set, as a legacy client does. */
  capsEx?: number;
}

/** rtmp://host[:port]/app/streamName, the stream name taken verbatim (query string and all). */
export interface RtmpTarget {
  host: string;
  port: number;
  app: string;
  streamName: string;
  tcUrl: string;
}

/**
 * Splits an RTMP URL by hand: `new URL` would resolve dot segments and escape characters in
 * the stream name, which hostile tests need sent as written.
 */
export function parseRtmpUrl(url: string): RtmpTarget {
  const m = /^rtmp:\/\/(\[[^\]]+\]|[^/:[\]]+)(?::(\d+))?\/([^/?]+)\/(.+)$/.exec(url);
  if (!m) throw new Error(`not an rtmp://host[:port]/app/streamName URL: ${url}`);
  const [, rawHost = "", rawPort, app = "", streamName = ""] = m;
  const port = rawPort ? Number(rawPort) : 1935;
  return { host: rawHost.replace(/^\[(.*)\]$/, "$1"), port, app, streamName, tcUrl: `rtmp://${rawHost}:${port}/${app}` };
}

const HANDSHAKE_SIZE = 1536;
const CSID_PROTOCOL = 2;
const CSID_COMMAND = 3;
const CSID_AUDIO = 4;
const CSID_VIDEO = 5;
const CSID_DATA = 6;
/** User control event types (spec 7.1.7). */
const PING_REQUEST = 6;
const PING_RESPONSE = 7;
const DEFAULT_TIMEOUT_MS = 5000;

interface CommandResult {
  ok: boolean;
  /** The values after the transaction id: command object, then info or the stream id. */
  values: Amf0Value[];
}

function text(value: Amf0Value | undefined): string {
  return typeof value === "string" ? value : "";
}

function isObject(value: Amf0Value | undefined): value is { [key: string]: Amf0Value } {
  return typeof value === "object" && value !== null && !(value instanceof Date) && !Array.isArray(value) && !(value instanceof Amf0EcmaArray);
}

/**
 * One publishing connection. connect() does the handshake, connect and createStream;
 * publish() sends publish and returns the server's answer. Every onStatus is kept in
 * `statuses`, and nextStatus() hands them out in order. The socket closes by close(), by the
 * server, or on a failed connect() or a protocol error; no timer outlives the wait it bounds.
 */
export class RtmpPublisher {
  /** Every onStatus received, in order. */
  readonly statuses: RtmpStatus[] = [];
  /** Resolves when the socket has closed, whoever closed it. */
  readonly closed: Promise<void>;
  /** The message stream id createStream returned. */
  streamId = 0;
  /** Why the socket failed, if it did (ECONNRESET, a protocol error). */
  socketError: Error | undefined;

  private readonly socket: net.Socket;
  private readonly reader = new ChunkStreamReader();
  private readonly results = new Map<number, CommandResult>();
  private readonly waiters = new Set<() => void>();
  private readonly timeoutMs: number;
  private handshake: Buffer | undefined = Buffer.alloc(0);
  private handshakeDone = false;
  private outChunkSize = DEFAULT_CHUNK_SIZE;
  private nextTransactionId = 1;
  /** statuses[statusCursor] is the next one nextStatus() returns. */
  private statusCursor = 0;
  private published = false;
  private isClosed = false;
  /** Bytes received, for acknowledgements: from the first byte, handshake included, as librtmp counts (spec 5.4.3 leaves it open). */
  private bytesReceived = 0;
  private lastAcknowledged = 0;
  /** The server's Window Acknowledgement Size: 0 until it sends one. */
  private ackWindow = 0;
  private announcedWindow = 0;

  private constructor(
    readonly target: RtmpTarget,
    private readonly options: RtmpPublisherOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.socket = net.connect({ host: target.host, port: target.port });
    this.socket.setNoDelay(true);
    this.closed = new Promise((resolve) =>
      this.socket.once("close", () => {
        this.isClosed = true;
        this.handshake = undefined;
        this.notify();
        resolve();
      }),
    );
    this.socket.on("error", (err) => (this.socketError ??= err));
    this.socket.on("data", (data: Buffer) => this.onData(data));
  }

  /** Connects, handshakes and creates a stream to publish `url`'s stream name on. */
  static async connect(url: string, options: RtmpPublisherOptions = {}): Promise<RtmpPublisher> {
    const client = new RtmpPublisher(parseRtmpUrl(url), options);
    try {
      await client.open(Date.now() + client.timeoutMs);
      return client;
    } catch (err) {
      client.close();
      throw err;
    }
  }

  /** The socket is still open. */
  get isOpen(): boolean {
    return !this.isClosed;
  }

  /**
   * Sends publish(streamName, type) and returns the first onStatus after it, or `{closed:
   * true}` if the socket closes first; fails after the timeout.
   */
  publish(options: { type?: "live" | "record" | "append"; timeoutMs?: number } = {}): Promise<RtmpStatus | RtmpClosed> {
    if (this.published) return Promise.reject(new Error("publish() was already called on this connection"));
    this.published = true;
    this.statusCursor = this.statuses.length;
    // spec 7.2.2.6: transaction id 0, a null command object, on the stream's own message stream
    this.sendCommand(["publish", 0, null, this.target.streamName, options.type ?? "live"], this.streamId);
    return this.nextStatus(options.timeoutMs);
  }

  /** The next onStatus not yet returned by publish() or nextStatus(), or `{closed: true}` once the socket has closed and none is left. */
  nextStatus(timeoutMs = this.timeoutMs): Promise<RtmpStatus | RtmpClosed> {
    return this.waitFor("onStatus", timeoutMs, () => {
      const status = this.statuses[this.statusCursor];
      if (status) {
        this.statusCursor++;
        return status;
      }
      return this.isClosed ? ({ closed: true } as const) : undefined;
    });
  }

  /** Sends an FLV video tag body (message type 9); false if the socket is gone. */
  sendVideo(tagBody: Uint8Array, timestampMs: number): boolean {
    return this.send({ csid: CSID_VIDEO, type: RtmpType.video, streamId: this.streamId, timestamp: timestampMs, payload: Buffer.from(tagBody) });
  }

  /** Sends an FLV audio tag body (message type 8); false if the socket is gone. */
  sendAudio(tagBody: Uint8Array, timestampMs: number): boolean {
    return this.send({ csid: CSID_AUDIO, type: RtmpType.audio, streamId: this.streamId, timestamp: timestampMs, payload: Buffer.from(tagBody) });
  }

  /** Sends @setDataFrame onMetaData, as OBS and ffmpeg do before their first tags. */
  sendMetadata(metadata: { [key: string]: number | string | boolean }): boolean {
    const payload = encodeAmf0(["@setDataFrame", "onMetaData", new Amf0EcmaArray(metadata)]);
    return this.send({ csid: CSID_DATA, type: RtmpType.amf0Data, streamId: this.streamId, timestamp: 0, payload });
  }

  /** Drops the connection at once; safe to call in any state, any number of times. */
  close(): void {
    this.socket.destroy();
  }

  private async open(deadline: number): Promise<void> {
    // C0 (version 3) and C1: time, four zero bytes (no digest: the simple handshake), random.
    const c1 = Buffer.alloc(HANDSHAKE_SIZE);
    for (let i = 8; i < HANDSHAKE_SIZE; i++) c1[i] = Math.floor(Math.random() * 256);
    this.socket.write(Buffer.concat([Buffer.from([3]), c1]));
    await this.waitFor("handshake", deadline - Date.now(), () => (this.handshakeDone ? true : this.failIfClosed("during the handshake")));

    this.outChunkSize = this.options.chunkSize ?? 4096;
    const chunkSize = Buffer.alloc(4);
    chunkSize.writeUInt32BE(this.outChunkSize);
    // Sent with the old size, which is why outChunkSize may change before it: 4 bytes fit any.
    this.send({ csid: CSID_PROTOCOL, type: RtmpType.setChunkSize, streamId: 0, timestamp: 0, payload: chunkSize });

    const connected = await this.call(deadline, "connect", {
      app: this.target.app,
      type: "nonprivate",
      flashVer: this.options.flashVer ?? "FMLE/3.0 (compatible; onair-test)",
      tcUrl: this.target.tcUrl,
      ...(this.options.capsEx !== undefined ? { capsEx: this.options.capsEx } : {}),
    });
    if (!connected.ok) throw new Error(`connect refused: ${JSON.stringify(connected.values)}`);
    const created = await this.call(deadline, "createStream", null);
    const streamId = created.values[1];
    if (!created.ok || typeof streamId !== "number") throw new Error(`createStream refused: ${JSON.stringify(created.values)}`);
    this.streamId = streamId;
  }

  /** Sends a command that expects _result or _error and waits for that. */
  private call(deadline: number, name: string, commandObject: Amf0Value): Promise<CommandResult> {
    const id = this.nextTransactionId++;
    this.sendCommand([name, id, commandObject], 0);
    return this.waitFor(`answer to ${name}`, deadline - Date.now(), () => this.results.get(id) ?? this.failIfClosed(`before the answer to ${name}`));
  }

  private sendCommand(values: Amf0Value[], streamId: number): boolean {
    return this.send({ csid: CSID_COMMAND, type: RtmpType.amf0Command, streamId, timestamp: 0, payload: encodeAmf0(values) });
  }

  private send(message: RtmpMessage): boolean {
    if (this.isClosed || this.socket.destroyed) return false;
    this.socket.write(encodeChunks(message, this.outChunkSize));
    return true;
  }

  private failIfClosed(when: string): undefined {
    if (!this.isClosed) return undefined;
    const why = this.socketError ? `: ${this.socketError.message}` : "";
    throw new Error(`the RTMP connection to ${this.target.host}:${this.target.port} closed ${when}${why}`);
  }

  /**
   * Resolves with the first value `check` returns other than undefined, checked now and after
   * every message and on close; rejects if `check` throws or after `timeoutMs`.
   */
  private waitFor<T>(what: string, timeoutMs: number, check: () => T | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const attempt = () => {
        let value: T | undefined;
        try {
          value = check();
        } catch (err) {
          finish();
          reject(err);
          return;
        }
        if (value === undefined) return;
        finish();
        resolve(value);
      };
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(attempt);
      };
      this.waiters.add(attempt);
      attempt();
      if (!this.waiters.has(attempt)) return;
      timer = setTimeout(() => {
        finish();
        reject(new Error(`no ${what} from ${this.target.host}:${this.target.port} within ${timeoutMs} ms`));
      }, Math.max(0, timeoutMs));
    });
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  private onData(data: Buffer): void {
    this.bytesReceived += data.length;
    try {
      if (!this.handshakeDone) {
        // S0, S1 and S2 come at once after C0C1; C2 echoes S1. Chunks may follow in the same read.
        this.handshake = Buffer.concat([this.handshake ?? Buffer.alloc(0), data]);
        if (this.handshake.length < 1 + 2 * HANDSHAKE_SIZE) return;
        if (this.handshake[0] !== 3) throw new Error(`RTMP: the server's handshake is version ${this.handshake[0]}, not 3`);
        this.socket.write(this.handshake.subarray(1, 1 + HANDSHAKE_SIZE));
        data = this.handshake.subarray(1 + 2 * HANDSHAKE_SIZE);
        this.handshake = undefined;
        this.handshakeDone = true;
      }
      for (const message of this.reader.push(data)) this.onMessage(message);
      if (this.ackWindow > 0 && this.bytesReceived - this.lastAcknowledged >= this.ackWindow) {
        this.lastAcknowledged = this.bytesReceived;
        this.sendControl(RtmpType.acknowledgement, this.bytesReceived >>> 0);
      }
    } catch (err) {
      this.socket.destroy(err as Error);
    }
    this.notify();
  }

  private onMessage(message: RtmpMessage): void {
    const { payload } = message;
    switch (message.type) {
      case RtmpType.windowAckSize:
        this.ackWindow = payload.readUInt32BE(0);
        break;
      case RtmpType.setPeerBandwidth: {
        // spec 5.4.5: answered with a Window Acknowledgement Size when it differs from the last sent
        const size = payload.readUInt32BE(0);
        if (size !== this.announcedWindow) {
          this.announcedWindow = size;
          this.sendControl(RtmpType.windowAckSize, size);
        }
        break;
      }
      case RtmpType.userControl:
        if (payload.readUInt16BE(0) === PING_REQUEST) {
          const answer = Buffer.alloc(6);
          answer.writeUInt16BE(PING_RESPONSE);
          payload.copy(answer, 2, 2, 6); // the request's timestamp, echoed
          this.send({ csid: CSID_PROTOCOL, type: RtmpType.userControl, streamId: 0, timestamp: 0, payload: answer });
        }
        break;
      case RtmpType.amf0Command:
      case RtmpType.amf3Command:
        // An AMF3 command message starts with one format byte, then AMF0 all the same.
        this.onCommand(decodeAmf0(message.type === RtmpType.amf3Command ? payload.subarray(1) : payload));
        break;
    }
  }

  private onCommand(values: Amf0Value[]): void {
    const [name, transactionId, ...rest] = values;
    if ((name === "_result" || name === "_error") && typeof transactionId === "number") {
      this.results.set(transactionId, { ok: name === "_result", values: rest });
    } else if (name === "onStatus") {
      const info = rest[1];
      if (isObject(info)) this.statuses.push({ level: text(info.level), code: text(info.code), description: text(info.description) });
    }
  }

  private sendControl(type: number, value: number): void {
    const payload = Buffer.alloc(4);
    payload.writeUInt32BE(value);
    this.send({ csid: CSID_PROTOCOL, type, streamId: 0, timestamp: 0, payload });
  }
}

// ─── FLV tag bodies (spec: FLV 10.1, E.4.2 and E.4.3; ISO 14496-15 5.2.4.1) ──────────────

// A 320x240 H.264 Baseline (level 1.3) black picture, from x264 via
// `ffmpeg -f lavfi -i color=black:size=320x240 -frames:v 1 -c:v libx264 -profile:v baseline -level 1.3`.
const SPS_320X240 = Buffer.from("6742c00dd90141fb011000000300100000030320f142a480", "hex");
const PPS = Buffer.from("68cb83cb20", "hex");
const IDR_320X240_BLACK = Buffer.from(
  "6588840af2628000a7bc9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d" +
    "75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d7" +
    "5d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75" +
    "d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d" +
    "75d75d75d75d75d75d75d75d75d75e",
  "hex",
);

/** FLV VideoTagHeader frame types. */
const KEY_FRAME = 1;
const INTER_FRAME = 2;

/** An H.264 AVC sequence header tag (0x17 0x00): the AVCDecoderConfigurationRecord of a 320x240 Baseline stream. */
export function avcSequenceHeaderTag(): Buffer {
  const record = Buffer.concat([
    Buffer.from([1, SPS_320X240[1]!, SPS_320X240[2]!, SPS_320X240[3]!]), // version, profile, compatibility, level (from the SPS)
    Buffer.from([0xff]), // 4-byte NALU lengths
    Buffer.from([0xe1, 0x00, SPS_320X240.length]), // one SPS
    SPS_320X240,
    Buffer.from([0x01, 0x00, PPS.length]), // one PPS
    PPS,
  ]);
  return Buffer.concat([Buffer.from([(KEY_FRAME << 4) | 7, 0x00, 0, 0, 0]), record]);
}

/** An H.264 key frame tag (0x17 0x01): one decodable black IDR picture for avcSequenceHeaderTag()'s stream. */
export function avcKeyframeTag(): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(IDR_320X240_BLACK.length);
  return Buffer.concat([Buffer.from([(KEY_FRAME << 4) | 7, 0x01, 0, 0, 0]), length, IDR_320X240_BLACK]);
}

/** A video tag with a legacy FLV CodecID (2 Sorenson H.263, 9 MPEG-4 Part 2, ...) and the given body. */
export function legacyVideoTag(codecId: number, body: Uint8Array, keyframe = true): Buffer {
  return Buffer.concat([Buffer.from([((keyframe ? KEY_FRAME : INTER_FRAME) << 4) | (codecId & 0x0f)]), body]);
}

/**
 * A Sorenson H.263 key frame tag (0x12), ffmpeg's default FLV video: a picture header (start
 * code, version 0, size code 5 = 320x240, intra, quantizer 4) without macroblocks.
 */
export function sorensonH263KeyframeTag(): Buffer {
  return legacyVideoTag(2, Buffer.from([0x00, 0x00, 0x80, 0x02, 0x82, 0x00]));
}

/** An MPEG-4 Part 2 key frame tag (0x19): a visual object sequence start (Simple Profile level 1), then a VOP start code. */
export function mpeg4Part2KeyframeTag(): Buffer {
  return legacyVideoTag(9, Buffer.from("000001b001000001b6", "hex"));
}

/** An enhanced-RTMP sequence start tag for a FourCC (OBS sends "hvc1" and "av01" this way); the configuration record is left out. */
export function enhancedSequenceStartTag(fourcc: string): Buffer {
  return Buffer.concat([Buffer.from([0x80 | (KEY_FRAME << 4) | 0]), Buffer.from(fourcc, "latin1")]);
}

/** An AAC sequence header tag (0xAF 0x00): AudioSpecificConfig 0x12 0x10, AAC-LC, 44.1 kHz, stereo. */
export function aacSequenceHeaderTag(): Buffer {
  return Buffer.from([0xaf, 0x00, 0x12, 0x10]);
}

/** One AAC-LC raw frame tag (0xAF 0x01) of silence for aacSequenceHeaderTag()'s config (ffmpeg's encoder, anullsrc). */
export function aacSilentFrameTag(): Buffer {
  return Buffer.from([0xaf, 0x01, 0x21, 0x10, 0x04, 0x60, 0x8c, 0x1c]);
}

/** An MP3 audio tag (0x2F: 44 kHz, 16-bit, stereo), ffmpeg's default FLV audio: one 128 kb/s MPEG-1 Layer III frame of silence. */
export function mp3FrameTag(): Buffer {
  const frame = Buffer.alloc(417); // 144 * 128000 / 44100, no padding
  frame.set([0xff, 0xfb, 0x90, 0x64]); // sync, MPEG-1 Layer III, 128 kb/s, 44.1 kHz, joint stereo; all-zero side info is silence
  return Buffer.concat([Buffer.from([0x2f]), frame]);
}
