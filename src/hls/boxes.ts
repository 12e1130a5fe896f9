// ISO-BMFF (fragmented MP4 / CMAF) as ffmpeg writes it to a pipe with
// `-movflags +frag_keyframe+empty_moov+default_base_moof`: an init segment (ftyp + moov), then
// fragments (moof + mdat), each one a part the packager can serve on its own. Pure: bytes in,
// boxes and facts out (ISO/IEC 14496-12 for the boxes, 14496-15 for avcC, 14496-1/-3 for esds).

import { codecString } from "../mp4";

/** What comes out of the splitter, in stream order. */
export type Fmp4Piece = { kind: "init"; bytes: Buffer } | { kind: "fragment"; bytes: Buffer };

/** Top-level boxes dropped from the stream: timing hints and padding nobody downstream needs. */
const DROPPED = new Set(["prft", "sidx", "styp", "free", "skip", "emsg", "mfra"]);

/** A box larger than this is refused (a corrupt size would otherwise buffer without end). */
const MAX_BOX_BYTES = 64 * 1024 * 1024;

export class Fmp4Error extends Error {
  override readonly name = "Fmp4Error";
}

/**
 * Splits a byte stream into the init segment and fragments. Feed chunks of any size; each call
 * returns what they completed. A new ftyp/moov mid-stream (a new run of the encoder) is a new
 * init. Throws `Fmp4Error` on malformed input; what was returned before it stays valid.
 */
export class Fmp4Splitter {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private ftyp: Buffer | undefined;
  private moof: Buffer | undefined;

  push(chunk: Buffer): Fmp4Piece[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: Fmp4Piece[] = [];
    for (;;) {
      const header = this.peek(16);
      if (!header || header.length < 8) break;
      const size = boxSize(header);
      if (size === undefined) break;
      if (size < 8) throw new Fmp4Error(`a top-level box of ${size} bytes: the stream is not ISO-BMFF`);
      if (size > MAX_BOX_BYTES) throw new Fmp4Error(`a top-level ${boxType(header)} box of ${size} bytes is larger than ${MAX_BOX_BYTES}`);
      if (this.buffered < size) break;
      this.take(size, out);
    }
    return out;
  }

  private take(size: number, out: Fmp4Piece[]): void {
    const box = this.read(size);
    const type = boxType(box);
    switch (type) {
      case "ftyp":
        this.ftyp = box;
        return;
      case "moov":
        out.push({ kind: "init", bytes: this.ftyp ? Buffer.concat([this.ftyp, box]) : box });
        this.ftyp = undefined;
        return;
      case "moof":
        if (this.moof) throw new Fmp4Error("a moof followed by another moof: its mdat is missing");
        this.moof = box;
        return;
      case "mdat":
        if (!this.moof) throw new Fmp4Error("an mdat without a moof before it");
        out.push({ kind: "fragment", bytes: Buffer.concat([this.moof, box]) });
        this.moof = undefined;
        return;
      default:
        if (!DROPPED.has(type) && !/^[\x20-\x7e]{4}$/.test(type)) throw new Fmp4Error(`a top-level box of type ${JSON.stringify(type)}: not ISO-BMFF`);
    }
  }

  /** The first `n` buffered bytes (fewer if not buffered), without consuming them. */
  private peek(n: number): Buffer | undefined {
    if (this.buffered === 0) return undefined;
    if (this.chunks[0]!.length >= n || this.chunks.length === 1) return this.chunks[0]!.subarray(0, n);
    return Buffer.concat(this.chunks, Math.min(n, this.buffered)).subarray(0, n);
  }

  private read(n: number): Buffer {
    const joined = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    const box = Buffer.from(joined.subarray(0, n));
    const rest = joined.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return box;
  }
}

/** A box's size from its header (64-bit sizes included); undefined if the header is incomplete. */
function boxSize(header: Buffer): number | undefined {
  const size = header.readUInt32BE(0);
  if (size === 1) {
    if (header.length < 16) return undefined;
    const large = header.readBigUInt64BE(8);
    return large > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(large);
  }
  if (size === 0) throw new Fmp4Error("a top-level box that runs to the end of the file: not a stream");
  return size;
}

const boxType = (b: Buffer) => b.toString("latin1", 4, 8);

/** A box inside a buffer: its type and the bytes of its payload (after the header). */
interface Box {
  type: string;
  payload: Buffer;
}

/** The boxes one after another in `buf` (a box's payload, or a whole segment). */
export function childBoxes(buf: Buffer): Box[] {
  const boxes: Box[] = [];
  let at = 0;
  while (at + 8 <= buf.length) {
    let size = buf.readUInt32BE(at);
    let header = 8;
    if (size === 1) {
      if (at + 16 > buf.length) throw new Fmp4Error("a truncated 64-bit box header");
      size = Number(buf.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) {
      size = buf.length - at;
    }
    if (size < header || at + size > buf.length) throw new Fmp4Error(`a ${boxType(buf.subarray(at))} box of ${size} bytes overruns its parent`);
    boxes.push({ type: buf.toString("latin1", at + 4, at + 8), payload: buf.subarray(at + header, at + size) });
    at += size;
  }
  return boxes;
}

function child(buf: Buffer, type: string): Buffer | undefined {
  return childBoxes(buf).find((b) => b.type === type)?.payload;
}

function need(buf: Buffer | undefined, what: string): Buffer {
  if (!buf) throw new Fmp4Error(`no ${what} box`);
  return buf;
}

export interface TrackDefaults {
  duration: number;
  size: number;
  flags: number;
}

export interface InitTrack {
  id: number;
  /** `vide`, `soun`, or another handler type. */
  handler: string;
  /** Units per second of this track's times. */
  timescale: number;
  /** The RFC 6381 codec string: `avc1.64001f`, `mp4a.40.2`; the sample entry's type otherwise. */
  codec: string;
  width?: number;
  height?: number;
  channels?: number;
  sampleRate?: number;
  /** From mvex/trex: what fragments fall back on. */
  defaults: TrackDefaults;
}

/** The tracks of an init segment (ftyp + moov). */
export function parseInit(init: Buffer): InitTrack[] {
  const moov = need(child(init, "moov"), "moov");
  const trex = new Map<number, TrackDefaults>();
  const mvex = child(moov, "mvex");
  for (const b of mvex ? childBoxes(mvex) : []) {
    if (b.type !== "trex") continue;
    trex.set(b.payload.readUInt32BE(4), { duration: b.payload.readUInt32BE(12), size: b.payload.readUInt32BE(16), flags: b.payload.readUInt32BE(20) });
  }
  return childBoxes(moov)
    .filter((b) => b.type === "trak")
    .map((trak) => {
      const tkhd = need(child(trak.payload, "tkhd"), "tkhd");
      const id = tkhd.readUInt32BE(tkhd[0] === 1 ? 20 : 12);
      const mdia = need(child(trak.payload, "mdia"), "mdia");
      const mdhd = need(child(mdia, "mdhd"), "mdhd");
      const timescale = mdhd.readUInt32BE(mdhd[0] === 1 ? 20 : 12);
      const handler = need(child(mdia, "hdlr"), "hdlr").toString("latin1", 8, 12);
      const stsd = need(child(need(child(need(child(mdia, "minf"), "minf"), "stbl"), "stbl"), "stsd"), "stsd");
      const entry = childBoxes(stsd.subarray(8))[0];
      if (!entry) throw new Fmp4Error(`track ${id} has no sample entry`);
      const track: InitTrack = { id, handler, timescale, codec: entry.type, defaults: trex.get(id) ?? { duration: 0, size: 0, flags: 0 } };
      if (handler === "vide" && entry.payload.length >= 78) {
        track.width = entry.payload.readUInt16BE(24);
        track.height = entry.payload.readUInt16BE(26);
        track.codec = videoCodec(entry.type, entry.payload.subarray(78));
      } else if (handler === "soun" && entry.payload.length >= 28) {
        track.channels = entry.payload.readUInt16BE(16);
        track.sampleRate = entry.payload.readUInt32BE(24) >>> 16;
        const esds = child(entry.payload.subarray(28), "esds");
        const aot = esds ? aacObjectType(esds.subarray(4)) : undefined;
        if (aot !== undefined) track.codec = `mp4a.40.${aot}`;
      }
      return track;
    });
}

const hex2 = (n: number) => n.toString(16).padStart(2, "0");

/** The configuration record each video sample entry type carries its codec parameters in. */
const CONFIG_BOX: Readonly<Record<string, { box: string; codec: "avc1" | "hvc1" | "av01" | "vp09" }>> = {
  avc1: { box: "avcC", codec: "avc1" },
  avc3: { box: "avcC", codec: "avc1" },
  hvc1: { box: "hvcC", codec: "hvc1" },
  hev1: { box: "hvcC", codec: "hvc1" },
  av01: { box: "av1C", codec: "av01" },
  vp09: { box: "vpcC", codec: "vp09" },
};

/**
 * A video sample entry's RFC 6381 string from its configuration record (`avc1.64001f`,
 * `hvc1.1.6.L93.b0`, `av01.0.08M.08`); the entry's type alone when the record is missing or short.
 */
function videoCodec(type: string, boxes: Buffer): string {
  const known = CONFIG_BOX[type];
  const config = known && child(boxes, known.box);
  if (!known || !config) return type;
  try {
    // hev1/avc3 keep their own prefix: the parameter sets may also be in the samples.
    return type + codecString({ codec: known.codec, config }).slice(4);
  } catch {
    return type;
  }
}

/**
 * The AAC audio object type from an esds payload (after its version and flags): the
 * ES_Descriptor (tag 3) holds a DecoderConfigDescriptor (tag 4) for MPEG-4 audio (0x40), whose
 * DecoderSpecificInfo (tag 5) starts with the AudioSpecificConfig's 5-bit object type.
 */
export function aacObjectType(descriptors: Buffer): number | undefined {
  let at = 0;
  const readDescriptor = (): { tag: number; start: number; end: number } | undefined => {
    if (at + 2 > descriptors.length) return undefined;
    const tag = descriptors[at++]!;
    let length = 0;
    for (let i = 0; i < 4; i++) {
      const b = descriptors[at++];
      if (b === undefined) return undefined;
      length = (length << 7) | (b & 0x7f);
      if (!(b & 0x80)) break;
    }
    const start = at;
    return { tag, start, end: Math.min(descriptors.length, start + length) };
  };
  const es = readDescriptor();
  if (!es || es.tag !== 3) return undefined;
  const flags = descriptors[at + 2]!;
  at += 3;
  if (flags & 0x80) at += 2; // dependsOn_ES_ID
  if (flags & 0x40) at += 1 + (descriptors[at] ?? 0); // URL
  if (flags & 0x20) at += 2; // OCR_ES_ID
  const config = readDescriptor();
  if (!config || config.tag !== 4 || descriptors[config.start] !== 0x40) return undefined;
  at = config.start + 13;
  const specific = readDescriptor();
  if (!specific || specific.tag !== 5 || specific.end <= specific.start) return undefined;
  const aot = descriptors[specific.start]! >> 3;
  if (aot !== 31) return aot;
  if (specific.end - specific.start < 2) return undefined;
  return 32 + (((descriptors[specific.start]! & 0x07) << 3) | (descriptors[specific.start + 1]! >> 5));
}

export interface FragmentTrack {
  id: number;
  /** tfdt: the first sample's decode time, in the track's timescale. */
  baseDecodeTime: number;
  sampleCount: number;
  /** The samples' durations summed, in the track's timescale. */
  duration: number;
  /** The samples' sizes summed, in bytes. */
  size: number;
  /** Whether the first sample is a sync sample (a keyframe): a part that can start playback. */
  startsWithSync: boolean;
}

export interface FragmentInfo {
  /** mfhd: the fragment's sequence number. */
  sequence: number;
  tracks: FragmentTrack[];
}

/** sample_is_non_sync_sample in the sample flags (ISO/IEC 14496-12 8.8.3.1). */
const NON_SYNC = 0x0001_0000;

/** Facts of one fragment (moof + mdat), with the init's tracks for their defaults. */
export function parseFragment(fragment: Buffer, tracks: readonly InitTrack[]): FragmentInfo {
  const moof = need(child(fragment, "moof"), "moof");
  const mfhd = need(child(moof, "mfhd"), "mfhd");
  const out: FragmentInfo = { sequence: mfhd.readUInt32BE(4), tracks: [] };
  for (const traf of childBoxes(moof)) {
    if (traf.type !== "traf") continue;
    const tfhd = need(child(traf.payload, "tfhd"), "tfhd");
    const tfhdFlags = tfhd.readUInt32BE(0) & 0xffffff;
    const id = tfhd.readUInt32BE(4);
    const trex = tracks.find((t) => t.id === id)?.defaults ?? { duration: 0, size: 0, flags: 0 };
    let at = 8;
    if (tfhdFlags & 0x1) at += 8;
    if (tfhdFlags & 0x2) at += 4;
    const defaultDuration = tfhdFlags & 0x8 ? tfhd.readUInt32BE((at += 4) - 4) : trex.duration;
    const defaultSize = tfhdFlags & 0x10 ? tfhd.readUInt32BE((at += 4) - 4) : trex.size;
    const defaultFlags = tfhdFlags & 0x20 ? tfhd.readUInt32BE((at += 4) - 4) : trex.flags;
    const tfdt = child(traf.payload, "tfdt");
    const baseDecodeTime = !tfdt ? 0 : tfdt[0] === 1 ? Number(tfdt.readBigUInt64BE(4)) : tfdt.readUInt32BE(4);
    const track: FragmentTrack = { id, baseDecodeTime, sampleCount: 0, duration: 0, size: 0, startsWithSync: !(defaultFlags & NON_SYNC) };
    let first = true;
    for (const trun of childBoxes(traf.payload)) {
      if (trun.type !== "trun") continue;
      const p = trun.payload;
      const flags = p.readUInt32BE(0) & 0xffffff;
      const count = p.readUInt32BE(4);
      let pos = 8;
      if (flags & 0x1) pos += 4; // data offset
      let firstFlags: number | undefined;
      if (flags & 0x4) firstFlags = p.readUInt32BE((pos += 4) - 4);
      const perSample = [0x100, 0x200, 0x400, 0x800].filter((f) => flags & f).length * 4;
      if (pos + count * perSample > p.length) throw new Fmp4Error(`track ${id}: a trun of ${count} samples overruns its box`);
      for (let i = 0; i < count; i++) {
        let sampleFlags = i === 0 && firstFlags !== undefined ? firstFlags : defaultFlags;
        const duration = flags & 0x100 ? p.readUInt32BE((pos += 4) - 4) : defaultDuration;
        const size = flags & 0x200 ? p.readUInt32BE((pos += 4) - 4) : defaultSize;
        if (flags & 0x400) {
          const f = p.readUInt32BE((pos += 4) - 4);
          if (!(i === 0 && firstFlags !== undefined)) sampleFlags = f;
        }
        if (flags & 0x800) pos += 4;
        if (first) {
          track.startsWithSync = !(sampleFlags & NON_SYNC);
          first = false;
        }
        track.duration += duration;
        track.size += size;
      }
      track.sampleCount += count;
    }
    out.tracks.push(track);
  }
  return out;
}
