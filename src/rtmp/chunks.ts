// The RTMP chunk stream (Adobe RTMP 1.0, section 5.3), both ways, as pure state machines: a
// writer that cuts messages into chunks with the shortest header that says what changed, and a
// reader that reassembles messages from bytes in any slicing. Neither touches a socket.

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

/** One whole RTMP message. */
export interface RtmpMessage {
  /** Chunk stream id: 2 for protocol control; 3 to 65599 as the sender chooses. */
  csid: number;
  type: number;
  /** Message stream id: 0 for the connection, the id createStream gave for a stream. */
  streamId: number;
  /** Absolute, in ms, 32 bits. */
  timestamp: number;
  payload: Buffer;
}

export class RtmpChunkError extends Error {
  override readonly name = "RtmpChunkError";
}

/** Spec 5.4.1: until a Set Chunk Size says otherwise. */
export const DEFAULT_CHUNK_SIZE = 128;
/** Chunk sizes above this are refused: a peer must not make the reader hold a whole 2 GB chunk. */
export const MAX_CHUNK_SIZE = 0xffffff;
const MESSAGE_HEADER_SIZE = [11, 7, 3, 0] as const;
/** A timestamp field holding this says the value is in the 4-byte extended timestamp (spec 5.3.1.3). */
const EXTENDED = 0xffffff;

/** The basic header: fmt and the chunk stream id in 1, 2 or 3 bytes (spec 5.3.1.1). */
export function basicHeader(fmt: number, csid: number): Buffer {
  if (!Number.isInteger(csid) || csid < 2 || csid > 65599) throw new RtmpChunkError(`chunk stream id ${csid} is out of range (2 to 65599)`);
  if (csid < 64) return Buffer.from([(fmt << 6) | csid]);
  if (csid < 320) return Buffer.from([fmt << 6, csid - 64]);
  return Buffer.from([(fmt << 6) | 1, (csid - 64) & 0xff, (csid - 64) >> 8]);
}

/** What one side of a chunk stream remembers for the headers that leave fields out. */
interface StreamState {
  timestamp: number;
  /**
   * What a type 3 chunk starting a new message adds. After a type 0 header it is that header's
   * timestamp (spec 5.3.1.2.4), after a type 1 or 2, their delta.
   */
  delta: number;
  length: number;
  type: number;
  streamId: number;
  /** Its last type 0–2 header had an extended timestamp, so its type 3 chunks carry one too. */
  extended: boolean;
  /** That extended value (the timestamp or delta), repeated on type 3 chunks. */
  extendedValue: number;
}

/**
 * Cuts messages into chunks. Per chunk stream: a type 0 header for its first message, a new
 * message stream or a timestamp going back; type 1 when the length or type changed; type 2
 * when only the delta changed; type 3 when nothing did. A timestamp or delta of 0xffffff or
 * more goes into the extended field, repeated on every type 3 chunk of that message (spec
 * 5.3.1.3; what ffmpeg, librtmp and node-media-server read).
 */
export class ChunkWriter {
  private size = DEFAULT_CHUNK_SIZE;
  private readonly streams = new Map<number, StreamState>();

  get chunkSize(): number {
    return this.size;
  }

  /**
   * The Set Chunk Size message for `size`, cut with the size in force before it; every
   * message written after it uses `size`, as the peer will read them.
   */
  setChunkSize(size: number): Buffer {
    if (!Number.isInteger(size) || size < 1 || size > MAX_CHUNK_SIZE) throw new RtmpChunkError(`chunk size ${size} is out of range (1 to ${MAX_CHUNK_SIZE})`);
    const payload = Buffer.alloc(4);
    payload.writeUInt32BE(size);
    const bytes = this.write({ csid: 2, type: RtmpType.setChunkSize, streamId: 0, timestamp: 0, payload });
    this.size = size;
    return bytes;
  }

  /** The chunks of one message, as one buffer. */
  write(m: RtmpMessage): Buffer {
    const { payload } = m;
    if (!Number.isInteger(m.timestamp) || m.timestamp < 0 || m.timestamp > 0xffffffff) throw new RtmpChunkError(`timestamp ${m.timestamp} is not a 32-bit ms value`);
    if (payload.length > 0xffffff) throw new RtmpChunkError(`a message of ${payload.length} bytes does not fit RTMP's 24-bit length`);
    const prev = this.streams.get(m.csid);
    let fmt: 0 | 1 | 2 | 3;
    let field: number;
    if (!prev || prev.streamId !== m.streamId || m.timestamp < prev.timestamp) {
      fmt = 0;
      field = m.timestamp;
    } else {
      field = m.timestamp - prev.timestamp;
      if (prev.length !== payload.length || prev.type !== m.type) fmt = 1;
      else if (prev.delta !== field) fmt = 2;
      else fmt = 3;
    }
    const extended = fmt === 3 ? prev!.extended : field >= EXTENDED;
    const extendedValue = fmt === 3 ? prev!.extendedValue : field;
    this.streams.set(m.csid, { timestamp: m.timestamp, delta: field, length: payload.length, type: m.type, streamId: m.streamId, extended, extendedValue });

    const header = Buffer.alloc(MESSAGE_HEADER_SIZE[fmt]);
    if (fmt <= 2) header.writeUIntBE(extended ? EXTENDED : field, 0, 3);
    if (fmt <= 1) {
      header.writeUIntBE(payload.length, 3, 3);
      header.writeUInt8(m.type, 6);
    }
    if (fmt === 0) header.writeUInt32LE(m.streamId, 7); // spec 5.3.1.2.1: the only little-endian field
    const ext = Buffer.alloc(extended ? 4 : 0);
    if (extended) ext.writeUInt32BE(extendedValue >>> 0);

    const parts = [basicHeader(fmt, m.csid), header, ext];
    const continuation = Buffer.concat([basicHeader(3, m.csid), ext]);
    for (let at = 0; at < payload.length; at += this.size) {
      if (at > 0) parts.push(continuation);
      parts.push(payload.subarray(at, at + this.size));
    }
    return Buffer.concat(parts);
  }
}

interface ReadState extends StreamState {
  /** The message being reassembled, if one is under way: its pieces so far (memory follows what arrived, not what a header claims). */
  partial?: { pieces: Buffer[]; received: number };
}

export interface ChunkReaderLimits {
  /** A message longer than this is refused when its header arrives. Default: RTMP's 24-bit maximum. */
  maxMessageSize?: number;
  /** All messages under way together may hold at most this many bytes. Default: 4 × maxMessageSize. */
  maxPartialBytes?: number;
  /** At most this many chunk streams at once (each holds header state). Default: every id RTMP has (65598). */
  maxChunkStreams?: number;
}

/**
 * Reassembles messages from the bytes a peer sends after the handshake. Set Chunk Size and
 * Abort take effect here, at once, since the very next chunk may depend on them; they are
 * handed on like any other message. Throws RtmpChunkError on a protocol violation.
 */
export class ChunkReader {
  private size = DEFAULT_CHUNK_SIZE;
  private pending: Buffer = Buffer.alloc(0);
  private readonly streams = new Map<number, ReadState>();
  private readonly maxMessageSize: number;
  private readonly maxPartialBytes: number;
  private readonly maxChunkStreams: number;
  private partialBytes = 0;

  /** A peer chooses lengths and chunk streams: the limits keep what it can make us hold bounded. */
  constructor(limits: ChunkReaderLimits = {}) {
    this.maxMessageSize = limits.maxMessageSize ?? 0xffffff;
    this.maxPartialBytes = limits.maxPartialBytes ?? 4 * this.maxMessageSize;
    this.maxChunkStreams = limits.maxChunkStreams ?? 65598;
  }

  /** The peer's chunk size now. */
  get chunkSize(): number {
    return this.size;
  }

  /** The messages completed by `data`. */
  push(data: Buffer): RtmpMessage[] {
    this.pending = this.pending.length === 0 ? data : Buffer.concat([this.pending, data]);
    const messages: RtmpMessage[] = [];
    let at = 0;
    for (;;) {
      const used = this.readChunk(at, messages);
      if (used === 0) break;
      at += used;
    }
    // A copy: the rest must not pin the whole of a large read.
    this.pending = at === 0 ? this.pending : Buffer.from(this.pending.subarray(at));
    return messages;
  }

  /** Reads one chunk at `at` if it is all there: its length in bytes, or 0 (nothing changed). */
  private readChunk(at: number, messages: RtmpMessage[]): number {
    const buf = this.pending;
    if (buf.length - at < 1) return 0;
    const fmt = buf[at]! >> 6;
    let csid = buf[at]! & 0x3f;
    let pos = at + 1;
    if (csid <= 1) {
      const extra = csid === 0 ? 1 : 2;
      if (buf.length < pos + extra) return 0;
      csid = csid === 0 ? 64 + buf[pos]! : 64 + buf[pos]! + buf[pos + 1]! * 256;
      pos += extra;
    }
    const headerSize = MESSAGE_HEADER_SIZE[fmt as 0 | 1 | 2 | 3];
    if (buf.length < pos + headerSize) return 0;
    const prev = this.streams.get(csid);
    if (fmt !== 0 && !prev) throw new RtmpChunkError(`a type ${fmt} chunk on chunk stream ${csid}, which has had no type 0 chunk`);
    if (!prev && this.streams.size >= this.maxChunkStreams) throw new RtmpChunkError(`a chunk stream beyond the ${this.maxChunkStreams} taken`);
    const field = fmt <= 2 ? buf.readUIntBE(pos, 3) : undefined;
    const length = fmt <= 1 ? buf.readUIntBE(pos + 3, 3) : prev!.length;
    const type = fmt <= 1 ? buf[pos + 6]! : prev!.type;
    const streamId = fmt === 0 ? buf.readUInt32LE(pos + 7) : prev!.streamId;
    pos += headerSize;
    const extended = field !== undefined ? field === EXTENDED : prev!.extended;
    if (extended && buf.length < pos + 4) return 0;
    const value = extended ? buf.readUInt32BE(pos) : field;
    if (extended) pos += 4;

    const partial = prev?.partial;
    if (partial && fmt !== 3) throw new RtmpChunkError(`a type ${fmt} chunk on chunk stream ${csid} in the middle of a message`);
    if (length > this.maxMessageSize) throw new RtmpChunkError(`a message of ${length} bytes (at most ${this.maxMessageSize} taken)`);
    const size = Math.min(this.size, length - (partial?.received ?? 0));
    if (buf.length < pos + size) return 0;

    // The chunk is all there: only now does the chunk stream's state change.
    let state: ReadState;
    if (partial) state = prev!;
    else {
      // A type 3 chunk that starts a message adds the last delta; its extended field, when it
      // has one, repeats that delta.
      const delta = fmt === 3 ? (extended ? value! : prev!.delta) : value!;
      const timestamp = fmt === 0 ? value! : (prev!.timestamp + delta) >>> 0;
      const extendedValue = extended ? value! : 0;
      state = { timestamp, delta, length, type, streamId, extended, extendedValue, partial: { pieces: [], received: 0 } };
      this.streams.set(csid, state);
    }
    const message = state.partial!;
    this.partialBytes += size;
    if (this.partialBytes > this.maxPartialBytes) throw new RtmpChunkError(`messages under way hold more than ${this.maxPartialBytes} bytes`);
    // A copy: a piece must not pin the whole read it came in.
    message.pieces.push(Buffer.from(buf.subarray(pos, pos + size)));
    message.received += size;
    if (message.received === length) {
      state.partial = undefined;
      this.partialBytes -= length;
      const payload = message.pieces.length === 1 ? message.pieces[0]! : Buffer.concat(message.pieces, length);
      this.onMessage({ csid, type, streamId, timestamp: state.timestamp, payload }, messages);
    }
    return pos + size - at;
  }

  private onMessage(message: RtmpMessage, messages: RtmpMessage[]): void {
    if (message.type === RtmpType.setChunkSize) {
      if (message.payload.length < 4) throw new RtmpChunkError("a Set Chunk Size message without its 4 bytes");
      const size = message.payload.readUInt32BE(0) & 0x7fffffff; // spec 5.4.1: the top bit is 0
      if (size < 1 || size > MAX_CHUNK_SIZE) throw new RtmpChunkError(`Set Chunk Size ${size} is out of range (1 to ${MAX_CHUNK_SIZE})`);
      this.size = size;
    } else if (message.type === RtmpType.abort && message.payload.length >= 4) {
      const state = this.streams.get(message.payload.readUInt32BE(0));
      if (state?.partial) this.partialBytes -= state.partial.received;
      if (state) state.partial = undefined;
    }
    messages.push(message);
  }
}

/** A 4-byte big-endian protocol control message (Set Chunk Size, Acknowledgement, Window Acknowledgement Size). */
export function controlMessage(type: number, value: number): RtmpMessage {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(value >>> 0);
  return { csid: 2, type, streamId: 0, timestamp: 0, payload };
}

/** User control event types (spec 7.1.7). */
export const UserControl = { streamBegin: 0, streamEof: 1, pingRequest: 6, pingResponse: 7 } as const;

/** The answer to a Ping Request: a Ping Response echoing its timestamp; undefined for any other user control message. */
export function pingResponse(request: RtmpMessage): RtmpMessage | undefined {
  if (request.type !== RtmpType.userControl || request.payload.length < 6 || request.payload.readUInt16BE(0) !== UserControl.pingRequest) return undefined;
  const payload = Buffer.alloc(6);
  payload.writeUInt16BE(UserControl.pingResponse, 0);
  request.payload.copy(payload, 2, 2, 6);
  return { csid: 2, type: RtmpType.userControl, streamId: 0, timestamp: 0, payload };
}
