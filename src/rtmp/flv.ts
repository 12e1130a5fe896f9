// FLV (Adobe FLV 10.1, annex E) read as a byte stream: the file header, then tags, each
// followed by its PreviousTagSize. A pure, incremental parser: bytes in any slicing go in, whole
// tags come out; nothing is read from a socket or a file here.

export const FlvTagType = { audio: 8, video: 9, script: 18 } as const;

export interface FlvTag {
  /** 8 audio, 9 video, 18 script data (onMetaData). */
  type: number;
  /** In ms: the 24-bit field with its extension byte as the top 8 bits (E.4.1). */
  timestamp: number;
  /** The tag's body: what an RTMP audio, video or data message carries. */
  data: Buffer;
}

export class FlvError extends Error {
  override readonly name = "FlvError";
}

const HEADER_SIZE = 9;
const TAG_HEADER_SIZE = 11;
/** Tags larger than this are refused: a corrupt size must not make the reader wait for 16 MB. */
export const MAX_FLV_TAG_SIZE = 0xffffff;

/**
 * Tags out of an FLV byte stream. `push` returns the tags its bytes completed; it throws
 * FlvError on a stream that is not FLV (no signature, a header size below 9) and on a
 * PreviousTagSize that does not match the tag before it (the stream lost bytes).
 */
export class FlvReader {
  /** Bytes not yet parsed, in arrival order; concatenated only once enough are there. */
  private chunks: Buffer[] = [];
  private length = 0;
  /** What comes next: the file header, the skip to the first PreviousTagSize, or a tag. */
  private stage: "header" | "skip" | "tag" = "header";
  private skip = 0;
  private headerSeen: { audio: boolean; video: boolean } | undefined;

  /** Flags of the file header, once read: which kinds of tags the stream announced. */
  get header(): { audio: boolean; video: boolean } | undefined {
    return this.headerSeen;
  }

  push(data: Buffer): FlvTag[] {
    if (data.length > 0) {
      this.chunks.push(data);
      this.length += data.length;
    }
    const tags: FlvTag[] = [];
    for (;;) {
      const need = this.needed();
      if (need === undefined || this.length < need) return tags;
      const tag = this.consume(need);
      if (tag) tags.push(tag);
    }
  }

  /** Bytes the next step needs in all, or undefined when even its size is not known yet. */
  private needed(): number | undefined {
    if (this.stage === "header") return HEADER_SIZE;
    if (this.stage === "skip") return this.skip;
    if (this.length < TAG_HEADER_SIZE) return undefined;
    const head = this.peek(TAG_HEADER_SIZE);
    return TAG_HEADER_SIZE + head.readUIntBE(1, 3) + 4;
  }

  private consume(n: number): FlvTag | undefined {
    const bytes = this.take(n);
    if (this.stage === "header") {
      if (bytes.toString("latin1", 0, 3) !== "FLV") throw new FlvError("not an FLV stream: it does not start with the FLV signature");
      const headerSize = bytes.readUInt32BE(5);
      if (headerSize < HEADER_SIZE) throw new FlvError(`an FLV header size of ${headerSize} bytes (at least 9)`);
      this.headerSeen = { audio: (bytes[4]! & 0x04) !== 0, video: (bytes[4]! & 0x01) !== 0 };
      // The rest of a longer header, then PreviousTagSize0 (always 0).
      this.skip = headerSize - HEADER_SIZE + 4;
      this.stage = "skip";
      return undefined;
    }
    if (this.stage === "skip") {
      this.stage = "tag";
      return undefined;
    }
    const size = bytes.readUIntBE(1, 3);
    const previousTagSize = bytes.readUInt32BE(TAG_HEADER_SIZE + size);
    if (previousTagSize !== TAG_HEADER_SIZE + size) {
      throw new FlvError(`an FLV tag of ${TAG_HEADER_SIZE + size} bytes followed by a PreviousTagSize of ${previousTagSize}: the stream is corrupt`);
    }
    // E.4.1: the low 5 bits are the type; bit 5 (Filter) marks encrypted tags, which we never produce.
    const type = bytes[0]! & 0x1f;
    const timestamp = (bytes.readUIntBE(4, 3) | (bytes[7]! << 24)) >>> 0;
    return { type, timestamp, data: bytes.subarray(TAG_HEADER_SIZE, TAG_HEADER_SIZE + size) };
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length >= n) return this.chunks[0]!.subarray(0, n);
    this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    let first = this.chunks[0]!;
    if (first.length < n) {
      first = Buffer.concat(this.chunks);
      this.chunks = [first];
    }
    const out = first.subarray(0, n);
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    this.length -= n;
    return out;
  }
}

/** An FLV tag as bytes (tag header, body, PreviousTagSize): for writers and tests. */
export function encodeFlvTag(tag: FlvTag): Buffer {
  if (tag.data.length > MAX_FLV_TAG_SIZE) throw new FlvError(`an FLV tag body of ${tag.data.length} bytes does not fit its 24-bit size`);
  const head = Buffer.alloc(TAG_HEADER_SIZE);
  head[0] = tag.type;
  head.writeUIntBE(tag.data.length, 1, 3);
  head.writeUIntBE(tag.timestamp & 0xffffff, 4, 3);
  head[7] = (tag.timestamp >>> 24) & 0xff;
  const tail = Buffer.alloc(4);
  tail.writeUInt32BE(TAG_HEADER_SIZE + tag.data.length);
  return Buffer.concat([head, tag.data, tail]);
}

/** An FLV file header and PreviousTagSize0. */
export function flvHeader(o: { audio: boolean; video: boolean }): Buffer {
  return Buffer.from([0x46, 0x4c, 0x56, 1, (o.audio ? 0x04 : 0) | (o.video ? 0x01 : 0), 0, 0, 0, 9, 0, 0, 0, 0]);
}
