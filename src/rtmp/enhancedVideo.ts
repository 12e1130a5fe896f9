// RTMP/FLV video message bodies, legacy (FLV 10.1 VideoTagHeader) and enhanced (E-RTMP v2
// ExVideoTagHeader), read into one discriminated union and written back. Pure functions: the
// ingest decides what to do with a codec; this only says what the bytes are.

import { decodeAmf0, encodeAmf0, type Amf0Value } from "./amf0";
import {
  ByteCursor,
  EnhancedRtmpError,
  fourCcBytes,
  multitrackLayout,
  multitrackLayoutValue,
  onlyValue,
  PACKET_TYPE_MODEX,
  readModEx,
  readTracks,
  sharedFourCc,
  si24Bytes,
  writeModEx,
  writeTracks,
  type MultitrackLayout,
} from "./enhancedCommon";

export const VIDEO_FOURCCS = ["avc1", "hvc1", "av01", "vp09"] as const;
export type VideoFourCc = (typeof VIDEO_FOURCCS)[number];

/** VideoFrameType 1..4; 5 (command) never reaches a frame, it is its own kind. */
export type VideoFrameType = 1 | 2 | 3 | 4;
export const VideoFrameTypes = { key: 1, inter: 2, disposableInter: 3, generatedKey: 4 } as const;

const PacketType = { sequenceStart: 0, codedFrames: 1, sequenceEnd: 2, codedFramesX: 3, metadata: 4, mpeg2tsSequenceStart: 5, multitrack: 6 } as const;
const FRAME_TYPE_COMMAND = 5;
const LEGACY_AVC = 7;

/** Legacy CodecIDs other than AVC: recognised so the ingest can name what it refuses; their bodies are not parsed. */
const LEGACY_VIDEO_CODECS: Readonly<Record<number, string>> = { 1: "jpeg", 2: "h263", 3: "screen", 4: "vp6", 5: "vp6a", 6: "screen2", 9: "mpeg4", 12: "hevc", 13: "av1" };

/**
 * What one track of a video message carries. `codec` is on every kind because a multitrack
 * message may mix codecs, and a receiver routes per codec before it looks at anything else.
 */
export type VideoPacket =
  /** SequenceStart: the decoder configuration record as sent (avcC, hvcC, av1C or vpcC). */
  | { kind: "config"; codec: VideoFourCc; record: Buffer }
  /**
   * CodedFrames / CodedFramesX. `keyframe` is derived from `frameType` (key or generated key) so
   * segmenters need not know the enum; writers use `frameType`. `compositionMs` is 0 where the
   * wire has none (CodedFramesX, AV1, VP9). `nanoOffset` is the ModEx TimestampOffsetNano.
   */
  | { kind: "frame"; codec: VideoFourCc; frameType: VideoFrameType; keyframe: boolean; compositionMs: number; nanoOffset?: number; data: Buffer }
  | { kind: "end"; codec: VideoFourCc }
  /** Metadata: AMF values, e.g. ["colorInfo", {...}] for HDR. */
  | { kind: "metadata"; codec: VideoFourCc; values: Amf0Value[] }
  /** MPEG2TSSequenceStart: the AV1 video descriptor for MPEG-2 TS carriage. */
  | { kind: "tsConfig"; codec: VideoFourCc; descriptor: Buffer }
  /** A FourCC this code does not know (vp08, vvc1, ...): reported, not thrown, so the other tracks of a message survive. */
  | { kind: "unsupported"; fourCc: string; reason: string };

export interface VideoTrack {
  trackId: number;
  packet: VideoPacket;
}

/**
 * A parsed video message. Single-track packets are flat (the common case needs no unwrapping);
 * `legacy: true` marks AVC in the pre-2023 form (CodecID 7), so a writer can answer in kind.
 */
export type VideoTag =
  | (VideoPacket & { legacy?: true })
  /** Frame type 5: a client-side seek marker (0 start, 1 end), no video. `codecId` is there for the legacy form. */
  | { kind: "command"; command: number; codecId?: number }
  | { kind: "multitrack"; layout: MultitrackLayout; tracks: VideoTrack[] }
  /** A legacy codec other than AVC (H.263, VP6, screen video, and the non-standard 12 HEVC / 13 AV1): body as sent. */
  | { kind: "legacy"; codecId: number; codecName: string; frameType: VideoFrameType; keyframe: boolean; data: Buffer };

function frameType(value: number): VideoFrameType {
  if (value < 1 || value > 4) throw new EnhancedRtmpError(`a video frame type of ${value}`);
  return value as VideoFrameType;
}

function isKey(type: VideoFrameType): boolean {
  return type === VideoFrameTypes.key || type === VideoFrameTypes.generatedKey;
}

function isVideoFourCc(fourCc: string): fourCc is VideoFourCc {
  return (VIDEO_FOURCCS as readonly string[]).includes(fourCc);
}

/** AVC and HEVC frames carry a composition time offset in CodedFrames; AV1 and VP9 have no B-frame reordering to signal. */
function hasCompositionTime(codec: VideoFourCc): boolean {
  return codec === "avc1" || codec === "hvc1";
}

function amf(data: Buffer): Amf0Value[] {
  try {
    return decodeAmf0(data);
  } catch (err) {
    throw new EnhancedRtmpError(`video metadata that is not AMF0: ${(err as Error).message}`, { cause: err });
  }
}

function readPacket(fourCc: string, type: number, rawFrameType: number, data: Buffer, nanoOffset: number | undefined): VideoPacket {
  if (!isVideoFourCc(fourCc)) return { kind: "unsupported", fourCc, reason: `video FourCC ${JSON.stringify(fourCc)} is not one of ${VIDEO_FOURCCS.join(", ")}` };
  const codec = fourCc;
  switch (type) {
    case PacketType.sequenceStart:
      return { kind: "config", codec, record: data };
    case PacketType.sequenceEnd:
      return { kind: "end", codec };
    case PacketType.metadata:
      return { kind: "metadata", codec, values: amf(data) };
    case PacketType.mpeg2tsSequenceStart:
      return { kind: "tsConfig", codec, descriptor: data };
    case PacketType.codedFrames:
    case PacketType.codedFramesX: {
      const ft = frameType(rawFrameType);
      const cur = new ByteCursor(data);
      const compositionMs = type === PacketType.codedFrames && hasCompositionTime(codec) ? cur.si24("composition time") : 0;
      const frame: VideoPacket = { kind: "frame", codec, frameType: ft, keyframe: isKey(ft), compositionMs, data: cur.rest() };
      return nanoOffset === undefined ? frame : { ...frame, nanoOffset };
    }
    default:
      throw new EnhancedRtmpError(`a video packet type of ${type}`);
  }
}

function readLegacy(first: number, cur: ByteCursor): VideoTag {
  const codecId = first & 0x0f;
  if (first >> 4 === FRAME_TYPE_COMMAND) return { kind: "command", command: cur.u8("video command"), codecId };
  const ft = frameType(first >> 4);
  if (codecId !== LEGACY_AVC) {
    const codecName = LEGACY_VIDEO_CODECS[codecId];
    if (codecName === undefined) throw new EnhancedRtmpError(`a legacy video codec id of ${codecId}`);
    return { kind: "legacy", codecId, codecName, frameType: ft, keyframe: isKey(ft), data: cur.rest() };
  }
  const avcPacketType = cur.u8("AVCPacketType");
  const compositionMs = cur.si24("composition time");
  if (avcPacketType === 0) return { kind: "config", codec: "avc1", record: cur.rest(), legacy: true };
  if (avcPacketType === 1) return { kind: "frame", codec: "avc1", frameType: ft, keyframe: isKey(ft), compositionMs, data: cur.rest(), legacy: true };
  if (avcPacketType === 2) return { kind: "end", codec: "avc1", legacy: true };
  throw new EnhancedRtmpError(`an AVCPacketType of ${avcPacketType}`);
}

/**
 * Reads one video message body. Legacy and enhanced forms share the first byte's frame type; bit
 * 0x80 (IsExHeader) says which layout follows. Throws EnhancedRtmpError on anything malformed.
 */
export function readVideoTag(body: Buffer): VideoTag {
  const cur = new ByteCursor(body);
  const first = cur.u8("video header");
  if ((first & 0x80) === 0) return readLegacy(first, cur);
  const rawFrameType = (first >> 4) & 0x07;
  const { packetType, nanoOffset } = readModEx(cur, first & 0x0f);
  if (packetType > PacketType.multitrack) throw new EnhancedRtmpError(`a video packet type of ${packetType}`);
  // The spec ignores the frame type of Metadata; encoders mark it as a command frame.
  if (packetType !== PacketType.metadata && rawFrameType === FRAME_TYPE_COMMAND) return { kind: "command", command: cur.u8("video command") };
  if (packetType !== PacketType.multitrack) return readPacket(cur.fourCc("video FourCC"), packetType, rawFrameType, cur.rest(), nanoOffset);
  const layoutByte = cur.u8("video multitrack type");
  const layout = multitrackLayout(layoutByte >> 4);
  const inner = layoutByte & 0x0f;
  if (inner >= PacketType.multitrack) throw new EnhancedRtmpError(`a video packet type of ${inner} inside a multitrack message`);
  const shared = layout === "manyTracksManyCodecs" ? undefined : cur.fourCc("video FourCC");
  const tracks = readTracks(cur, layout, shared).map((t) => ({ trackId: t.trackId, packet: readPacket(t.fourCc, inner, rawFrameType, t.body, nanoOffset) }));
  return { kind: "multitrack", layout, tracks };
}

// ---- writing ----

type WritablePacket = Exclude<VideoPacket, { kind: "unsupported" }>;

function writable(packet: VideoPacket): WritablePacket {
  if (packet.kind === "unsupported") throw new EnhancedRtmpError(`cannot write a video packet of unsupported FourCC ${JSON.stringify(packet.fourCc)}`);
  return packet;
}

/**
 * The packet type a set of packets goes out as (one per message). Frames use CodedFramesX when no
 * AVC/HEVC track needs a composition time, saving three bytes; AV1/VP9 stay on CodedFrames,
 * the only type the spec defines for them.
 */
function packetTypeOf(packets: readonly WritablePacket[]): number {
  const kind = onlyValue(packets.map((p) => p.kind), "packet kinds");
  if (kind === "config") return PacketType.sequenceStart;
  if (kind === "end") return PacketType.sequenceEnd;
  if (kind === "metadata") return PacketType.metadata;
  if (kind === "tsConfig") return PacketType.mpeg2tsSequenceStart;
  const needsFull = packets.some((p) => p.kind === "frame" && (!hasCompositionTime(p.codec) || p.compositionMs !== 0));
  return needsFull ? PacketType.codedFrames : PacketType.codedFramesX;
}

/** The frame type nibble: frames carry theirs; metadata goes as a command frame, as encoders send it; the rest as key frames. */
function frameTypeOf(packets: readonly WritablePacket[]): number {
  return onlyValue(
    packets.map((p) => (p.kind === "frame" ? p.frameType : p.kind === "metadata" ? FRAME_TYPE_COMMAND : VideoFrameTypes.key)),
    "frame types",
  );
}

function packetBody(p: WritablePacket, packetType: number): Buffer {
  switch (p.kind) {
    case "config":
      return p.record;
    case "end":
      return Buffer.alloc(0);
    case "metadata":
      return encodeAmf0(p.values);
    case "tsConfig":
      return p.descriptor;
    case "frame":
      if (packetType === PacketType.codedFrames && hasCompositionTime(p.codec)) return Buffer.concat([si24Bytes(p.compositionMs, "a composition time"), p.data]);
      return p.data;
  }
}

/** First byte and ModEx prefix: what every enhanced message starts with. */
function exHeader(frameType: number, packetType: number, nanoOffset: number | undefined): Buffer {
  if (nanoOffset === undefined) return Buffer.from([0x80 | (frameType << 4) | packetType]);
  return Buffer.concat([Buffer.from([0x80 | (frameType << 4) | PACKET_TYPE_MODEX]), writeModEx(nanoOffset, packetType)]);
}

function nanoOffsetOf(packets: readonly WritablePacket[]): number | undefined {
  return onlyValue(packets.map((p) => (p.kind === "frame" ? p.nanoOffset : undefined)), "nanosecond offsets");
}

function writeLegacyAvc(p: WritablePacket): Buffer {
  if (p.codec !== "avc1") throw new EnhancedRtmpError(`the legacy video form carries AVC only, not ${p.codec}`);
  if (p.kind !== "config" && p.kind !== "frame" && p.kind !== "end") throw new EnhancedRtmpError(`the legacy video form has no ${p.kind} packet`);
  const ft = p.kind === "frame" ? p.frameType : VideoFrameTypes.key;
  const avcPacketType = p.kind === "config" ? 0 : p.kind === "frame" ? 1 : 2;
  const body = p.kind === "config" ? p.record : p.kind === "frame" ? p.data : Buffer.alloc(0);
  const cts = si24Bytes(p.kind === "frame" ? p.compositionMs : 0, "a composition time");
  return Buffer.concat([Buffer.from([(ft << 4) | LEGACY_AVC, avcPacketType]), cts, body]);
}

function writeMultitrack(layout: MultitrackLayout, tracks: readonly VideoTrack[]): Buffer {
  const packets = tracks.map((t) => writable(t.packet));
  const packetType = packetTypeOf(packets);
  const shared = sharedFourCc(layout, packets.map((p) => p.codec));
  const head = [exHeader(frameTypeOf(packets), PacketType.multitrack, nanoOffsetOf(packets)), Buffer.from([(multitrackLayoutValue(layout) << 4) | packetType])];
  if (shared !== undefined) head.push(fourCcBytes(shared));
  const raw = packets.map((p, i) => ({ trackId: tracks[i]!.trackId, fourCc: p.codec, body: packetBody(p, packetType) }));
  return Buffer.concat([...head, ...writeTracks(layout, raw)]);
}

/**
 * Writes a video message body: the enhanced form for every kind, the legacy one for AVC packets
 * marked `legacy`, and legacy codecs as they were read. readVideoTag(encodeVideoTag(t)) gives t back.
 */
export function encodeVideoTag(tag: VideoTag): Buffer {
  switch (tag.kind) {
    case "command":
      // The packet type of a command is not read; 0 keeps the nibble defined.
      if (tag.codecId !== undefined) return Buffer.from([(FRAME_TYPE_COMMAND << 4) | (tag.codecId & 0x0f), tag.command]);
      return Buffer.from([0x80 | (FRAME_TYPE_COMMAND << 4), tag.command]);
    case "legacy":
      return Buffer.concat([Buffer.from([(tag.frameType << 4) | (tag.codecId & 0x0f)]), tag.data]);
    case "multitrack":
      return writeMultitrack(tag.layout, tag.tracks);
    default: {
      const p = writable(tag);
      if ("legacy" in tag && tag.legacy) return writeLegacyAvc(p);
      const packetType = packetTypeOf([p]);
      return Buffer.concat([exHeader(frameTypeOf([p]), packetType, nanoOffsetOf([p])), fourCcBytes(p.codec), packetBody(p, packetType)]);
    }
  }
}
