// What Enhanced RTMP (veovera E-RTMP v2) audio and video tags share: a bounds-checked byte
// cursor, the ModEx prefix (with its TimestampOffsetNano) and the multitrack framing. Pure: bytes
// in, values out; every way a peer's bytes can be wrong ends in EnhancedRtmpError.

/** Every malformed Enhanced RTMP tag is refused with this, so callers catch one class. */
export class EnhancedRtmpError extends Error {
  override readonly name = "EnhancedRtmpError";
}

/** AvMultitrackType: how the tracks of one message are framed. */
export type MultitrackLayout = "oneTrack" | "manyTracks" | "manyTracksManyCodecs";
const LAYOUTS: readonly MultitrackLayout[] = ["oneTrack", "manyTracks", "manyTracksManyCodecs"];

/** The ModEx packet type is 7 in both the audio and the video enum. */
export const PACKET_TYPE_MODEX = 7;
/** Above this the TimestampOffsetNano would reach into the next millisecond, which RTMP's own timestamp carries. */
export const MAX_NANO_OFFSET = 999_999;

/** Reads a peer's bytes without ever going past their end: a short message throws EnhancedRtmpError, not RangeError. */
export class ByteCursor {
  private at = 0;
  constructor(private readonly buf: Buffer) {}

  get remaining(): number {
    return this.buf.length - this.at;
  }

  bytes(n: number, field: string): Buffer {
    if (n > this.remaining) throw new EnhancedRtmpError(`${field}: ${n} bytes needed at byte ${this.at}, ${this.remaining} left`);
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  u8(field: string): number {
    return this.bytes(1, field)[0]!;
  }

  u16(field: string): number {
    return this.bytes(2, field).readUInt16BE(0);
  }

  u24(field: string): number {
    return this.bytes(3, field).readUIntBE(0, 3);
  }

  u32(field: string): number {
    return this.bytes(4, field).readUInt32BE(0);
  }

  si24(field: string): number {
    return this.bytes(3, field).readIntBE(0, 3);
  }

  /** FourCCs are ASCII; latin1 keeps any byte as one character, so an odd code is still reported as sent. */
  fourCc(field: string): string {
    return this.bytes(4, field).toString("latin1");
  }

  rest(): Buffer {
    return this.bytes(this.remaining, "rest");
  }
}

/**
 * Follows ModEx prefixes until the real packet type. Each carries its own size (UI8 + 1, or
 * UI16 + 1 when the byte says 256), so a modifier this code does not know is skipped, as the
 * design intends; only TimestampOffsetNano is read.
 */
export function readModEx(cur: ByteCursor, packetType: number): { packetType: number; nanoOffset?: number } {
  let nanoOffset: number | undefined;
  while (packetType === PACKET_TYPE_MODEX) {
    let size = cur.u8("ModEx data size") + 1;
    if (size === 256) size = cur.u16("ModEx 16-bit data size") + 1;
    const data = cur.bytes(size, "ModEx data");
    const next = cur.u8("ModEx type");
    packetType = next & 0x0f;
    if (next >> 4 !== 0) continue;
    if (data.length < 3) throw new EnhancedRtmpError(`a TimestampOffsetNano of ${data.length} bytes (at least 3)`);
    nanoOffset = data.readUIntBE(0, 3);
    if (nanoOffset > MAX_NANO_OFFSET) throw new EnhancedRtmpError(`a TimestampOffsetNano of ${nanoOffset} ns (at most ${MAX_NANO_OFFSET})`);
  }
  return nanoOffset === undefined ? { packetType } : { packetType, nanoOffset };
}

/** The ModEx prefix for a nanosecond offset: size byte (3 - 1), UI24 offset, then TimestampOffsetNano (0) with the real packet type. */
export function writeModEx(nanoOffset: number, packetType: number): Buffer {
  if (!Number.isInteger(nanoOffset) || nanoOffset < 0 || nanoOffset > MAX_NANO_OFFSET) {
    throw new EnhancedRtmpError(`a nanosecond offset of ${nanoOffset} (an integer 0..${MAX_NANO_OFFSET})`);
  }
  const out = Buffer.alloc(5);
  out[0] = 2;
  out.writeUIntBE(nanoOffset, 1, 3);
  out[4] = packetType;
  return out;
}

export function multitrackLayout(value: number): MultitrackLayout {
  const layout = LAYOUTS[value];
  if (!layout) throw new EnhancedRtmpError(`an AvMultitrackType of ${value}`);
  return layout;
}

export function multitrackLayoutValue(layout: MultitrackLayout): number {
  return LAYOUTS.indexOf(layout);
}

/** One track's slice of a multitrack message, before its codec-specific body is read. */
export interface RawTrack {
  trackId: number;
  fourCc: string;
  body: Buffer;
}

/**
 * Splits the body of a multitrack message into tracks. OneTrack has no size (the track runs to
 * the end); the ManyTracks layouts give each a UI24 size, which must stay within the message.
 */
export function readTracks(cur: ByteCursor, layout: MultitrackLayout, sharedFourCc: string | undefined): RawTrack[] {
  if (layout === "oneTrack") return [{ trackId: cur.u8("track id"), fourCc: sharedFourCc!, body: cur.rest() }];
  const tracks: RawTrack[] = [];
  while (cur.remaining > 0) {
    const fourCc = sharedFourCc ?? cur.fourCc("track FourCC");
    const trackId = cur.u8("track id");
    const size = cur.u24("track size");
    tracks.push({ trackId, fourCc, body: cur.bytes(size, `track ${trackId}`) });
  }
  if (tracks.length === 0) throw new EnhancedRtmpError("a multitrack message without tracks");
  return tracks;
}

/** The inverse of readTracks, after the header (and shared FourCC) the caller wrote. */
export function writeTracks(layout: MultitrackLayout, tracks: readonly RawTrack[]): Buffer[] {
  if (tracks.length === 0) throw new EnhancedRtmpError("a multitrack message without tracks");
  if (layout === "oneTrack" && tracks.length !== 1) throw new EnhancedRtmpError(`a OneTrack message with ${tracks.length} tracks`);
  const parts: Buffer[] = [];
  for (const t of tracks) {
    if (!Number.isInteger(t.trackId) || t.trackId < 0 || t.trackId > 0xff) throw new EnhancedRtmpError(`a track id of ${t.trackId} (0..255)`);
    if (layout === "oneTrack") {
      parts.push(Buffer.from([t.trackId]), t.body);
      continue;
    }
    if (t.body.length > 0xffffff) throw new EnhancedRtmpError(`a track of ${t.body.length} bytes does not fit its 24-bit size`);
    const head = Buffer.alloc(4);
    head[0] = t.trackId;
    head.writeUIntBE(t.body.length, 1, 3);
    if (layout === "manyTracksManyCodecs") parts.push(fourCcBytes(t.fourCc));
    parts.push(head, t.body);
  }
  return parts;
}

/** The tracks of a ManyTracks or OneTrack message share one codec; this finds it or says why not. */
export function sharedFourCc(layout: MultitrackLayout, fourCcs: readonly string[]): string | undefined {
  if (layout === "manyTracksManyCodecs") return undefined;
  const first = fourCcs[0]!;
  if (fourCcs.some((f) => f !== first)) throw new EnhancedRtmpError(`a ${layout} message with codecs ${fourCcs.join(", ")}: use manyTracksManyCodecs`);
  return first;
}

export function fourCcBytes(fourCc: string): Buffer {
  const out = Buffer.from(fourCc, "latin1");
  if (out.length !== 4) throw new EnhancedRtmpError(`a FourCC of ${out.length} bytes: ${JSON.stringify(fourCc)}`);
  return out;
}

export function si24Bytes(value: number, field: string): Buffer {
  if (!Number.isInteger(value) || value < -0x800000 || value > 0x7fffff) throw new EnhancedRtmpError(`${field} of ${value} does not fit a signed 24-bit field`);
  const out = Buffer.alloc(3);
  out.writeIntBE(value, 0, 3);
  return out;
}

/** All elements equal, or the message cannot carry them: header fields are shared by every track. */
export function onlyValue<T>(values: readonly T[], field: string): T {
  const first = values[0]!;
  if (values.some((v) => v !== first)) throw new EnhancedRtmpError(`tracks of one message with different ${field}`);
  return first;
}
