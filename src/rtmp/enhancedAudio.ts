// RTMP/FLV audio message bodies, legacy (FLV 10.1 AudioTagHeader) and enhanced (E-RTMP v2
// ExAudioTagHeader, SoundFormat 9), read into one discriminated union and written back.

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
  writeModEx,
  writeTracks,
  type MultitrackLayout,
} from "./enhancedCommon";

export const AUDIO_FOURCCS = ["mp4a", "Opus", "ac-3", "ec-3", "fLaC", ".mp3"] as const;
export type AudioFourCc = (typeof AUDIO_FOURCCS)[number];

const PacketType = { sequenceStart: 0, codedFrames: 1, sequenceEnd: 2, multichannelConfig: 4, multitrack: 5 } as const;
const SOUND_FORMAT_EX = 9;
const SOUND_FORMAT_AAC = 10;

/** Legacy SoundFormats by name; 9 is the enhanced header, 10 AAC is parsed, 12 and 13 are reserved. */
const LEGACY_AUDIO_FORMATS: Readonly<Record<number, string>> = {
  0: "pcm-platform-endian",
  1: "adpcm",
  2: "mp3",
  3: "pcm-little-endian",
  4: "nellymoser-16k-mono",
  5: "nellymoser-8k-mono",
  6: "nellymoser",
  7: "g711-alaw",
  8: "g711-mulaw",
  11: "speex",
  14: "mp3-8k",
  15: "device-specific",
};

export type AudioChannelOrder = "unspecified" | "native" | "custom";
const CHANNEL_ORDERS: readonly AudioChannelOrder[] = ["unspecified", "native", "custom"];

/** What one track of an audio message carries; `codec` on every kind because multitrack messages may mix codecs. */
export type AudioPacket =
  /** SequenceStart: AudioSpecificConfig for AAC, the ID header for Opus, the STREAMINFO for FLAC; as sent. */
  | { kind: "config"; codec: AudioFourCc; config: Buffer }
  /** CodedFrames; `nanoOffset` is the ModEx TimestampOffsetNano. */
  | { kind: "frame"; codec: AudioFourCc; nanoOffset?: number; data: Buffer }
  | { kind: "end"; codec: AudioFourCc }
  /**
   * MultichannelConfig, for codecs that do not describe their own speaker layout. `channelFlags`
   * (AudioChannelMask bits) comes with the native order, `mapping` (AudioChannel per channel) with the custom one.
   */
  | { kind: "channels"; codec: AudioFourCc; order: AudioChannelOrder; channelCount: number; channelFlags?: number; mapping?: number[] }
  /** A FourCC this code does not know: reported, not thrown, so the other tracks of a message survive. */
  | { kind: "unsupported"; fourCc: string; reason: string };

export interface AudioTrack {
  trackId: number;
  packet: AudioPacket;
}

/** A parsed audio message; `legacy: true` marks AAC in the pre-2023 form (SoundFormat 10). */
export type AudioTag =
  | (AudioPacket & { legacy?: true })
  | { kind: "multitrack"; layout: MultitrackLayout; tracks: AudioTrack[] }
  /** An empty message: RTMP's silence signal (flush the decoder, let video run on the wall clock). */
  | { kind: "silence" }
  /** A legacy format other than AAC, with its header bits: rate index (0 5.5 kHz .. 3 44 kHz), 8/16-bit, stereo. */
  | { kind: "legacy"; format: number; formatName: string; rateIndex: number; sampleBits: 8 | 16; stereo: boolean; data: Buffer };

function isAudioFourCc(fourCc: string): fourCc is AudioFourCc {
  return (AUDIO_FOURCCS as readonly string[]).includes(fourCc);
}

function readChannels(codec: AudioFourCc, data: Buffer): AudioPacket {
  const cur = new ByteCursor(data);
  const orderValue = cur.u8("audio channel order");
  const order = CHANNEL_ORDERS[orderValue];
  if (order === undefined) throw new EnhancedRtmpError(`an audio channel order of ${orderValue}`);
  const channelCount = cur.u8("audio channel count");
  if (order === "native") return { kind: "channels", codec, order, channelCount, channelFlags: cur.u32("audio channel flags") };
  if (order === "custom") return { kind: "channels", codec, order, channelCount, mapping: [...cur.bytes(channelCount, "audio channel mapping")] };
  return { kind: "channels", codec, order, channelCount };
}

function readPacket(fourCc: string, type: number, data: Buffer, nanoOffset: number | undefined): AudioPacket {
  if (!isAudioFourCc(fourCc)) return { kind: "unsupported", fourCc, reason: `audio FourCC ${JSON.stringify(fourCc)} is not one of ${AUDIO_FOURCCS.join(", ")}` };
  const codec = fourCc;
  switch (type) {
    case PacketType.sequenceStart:
      return { kind: "config", codec, config: data };
    case PacketType.codedFrames:
      return nanoOffset === undefined ? { kind: "frame", codec, data } : { kind: "frame", codec, nanoOffset, data };
    case PacketType.sequenceEnd:
      return { kind: "end", codec };
    case PacketType.multichannelConfig:
      return readChannels(codec, data);
    default:
      throw new EnhancedRtmpError(`an audio packet type of ${type}`);
  }
}

function readLegacy(first: number, cur: ByteCursor): AudioTag {
  const format = first >> 4;
  if (format === SOUND_FORMAT_AAC) {
    const aacPacketType = cur.u8("AACPacketType");
    if (aacPacketType === 0) return { kind: "config", codec: "mp4a", config: cur.rest(), legacy: true };
    if (aacPacketType === 1) return { kind: "frame", codec: "mp4a", data: cur.rest(), legacy: true };
    throw new EnhancedRtmpError(`an AACPacketType of ${aacPacketType}`);
  }
  const formatName = LEGACY_AUDIO_FORMATS[format];
  if (formatName === undefined) throw new EnhancedRtmpError(`a legacy sound format of ${format}`);
  return { kind: "legacy", format, formatName, rateIndex: (first >> 2) & 0x03, sampleBits: first & 0x02 ? 16 : 8, stereo: (first & 0x01) !== 0, data: cur.rest() };
}

/** Reads one audio message body; SoundFormat 9 switches to the enhanced layout. Throws EnhancedRtmpError on anything malformed. */
export function readAudioTag(body: Buffer): AudioTag {
  if (body.length === 0) return { kind: "silence" };
  const cur = new ByteCursor(body);
  const first = cur.u8("audio header");
  if (first >> 4 !== SOUND_FORMAT_EX) return readLegacy(first, cur);
  const { packetType, nanoOffset } = readModEx(cur, first & 0x0f);
  if (packetType !== PacketType.multitrack) {
    if (packetType > PacketType.multitrack || packetType === 3) throw new EnhancedRtmpError(`an audio packet type of ${packetType}`);
    return readPacket(cur.fourCc("audio FourCC"), packetType, cur.rest(), nanoOffset);
  }
  const layoutByte = cur.u8("audio multitrack type");
  const layout = multitrackLayout(layoutByte >> 4);
  const inner = layoutByte & 0x0f;
  if (inner === PacketType.multitrack || inner === PACKET_TYPE_MODEX) throw new EnhancedRtmpError(`an audio packet type of ${inner} inside a multitrack message`);
  const shared = layout === "manyTracksManyCodecs" ? undefined : cur.fourCc("audio FourCC");
  const tracks = readTracks(cur, layout, shared).map((t) => ({ trackId: t.trackId, packet: readPacket(t.fourCc, inner, t.body, nanoOffset) }));
  return { kind: "multitrack", layout, tracks };
}

// ---- writing ----

type WritablePacket = Exclude<AudioPacket, { kind: "unsupported" }>;

function writable(packet: AudioPacket): WritablePacket {
  if (packet.kind === "unsupported") throw new EnhancedRtmpError(`cannot write an audio packet of unsupported FourCC ${JSON.stringify(packet.fourCc)}`);
  return packet;
}

const PACKET_TYPE_OF_KIND: Readonly<Record<WritablePacket["kind"], number>> = {
  config: PacketType.sequenceStart,
  frame: PacketType.codedFrames,
  end: PacketType.sequenceEnd,
  channels: PacketType.multichannelConfig,
};

function packetBody(p: WritablePacket): Buffer {
  switch (p.kind) {
    case "config":
      return p.config;
    case "frame":
      return p.data;
    case "end":
      return Buffer.alloc(0);
    case "channels":
      return channelsBody(p);
  }
}

function channelsBody(p: Extract<AudioPacket, { kind: "channels" }>): Buffer {
  const head = Buffer.from([CHANNEL_ORDERS.indexOf(p.order), p.channelCount]);
  if (p.order === "native") {
    const flags = Buffer.alloc(4);
    flags.writeUInt32BE(p.channelFlags ?? 0);
    return Buffer.concat([head, flags]);
  }
  if (p.order === "custom") {
    const mapping = p.mapping ?? [];
    if (mapping.length !== p.channelCount) throw new EnhancedRtmpError(`a custom channel mapping of ${mapping.length} entries for ${p.channelCount} channels`);
    return Buffer.concat([head, Buffer.from(mapping)]);
  }
  return head;
}

function exHeader(packetType: number, packets: readonly WritablePacket[]): Buffer {
  const nanoOffset = onlyValue(packets.map((p) => (p.kind === "frame" ? p.nanoOffset : undefined)), "nanosecond offsets");
  if (nanoOffset === undefined) return Buffer.from([(SOUND_FORMAT_EX << 4) | packetType]);
  return Buffer.concat([Buffer.from([(SOUND_FORMAT_EX << 4) | PACKET_TYPE_MODEX]), writeModEx(nanoOffset, packetType)]);
}

function writeLegacyAac(p: WritablePacket): Buffer {
  if (p.codec !== "mp4a" || (p.kind !== "config" && p.kind !== "frame")) throw new EnhancedRtmpError(`the legacy audio form carries AAC config and frames only, not ${p.codec} ${p.kind}`);
  // 0xAF: AAC, 44 kHz, 16-bit, stereo, the fixed values FLV prescribes for AAC whatever the real rate.
  return Buffer.concat([Buffer.from([0xaf, p.kind === "config" ? 0 : 1]), p.kind === "config" ? p.config : p.data]);
}

function writeMultitrack(layout: MultitrackLayout, tracks: readonly AudioTrack[]): Buffer {
  const packets = tracks.map((t) => writable(t.packet));
  const packetType = onlyValue(packets.map((p) => PACKET_TYPE_OF_KIND[p.kind]), "packet kinds");
  const shared = sharedFourCc(layout, packets.map((p) => p.codec));
  const head = [exHeader(PacketType.multitrack, packets), Buffer.from([(multitrackLayoutValue(layout) << 4) | packetType])];
  if (shared !== undefined) head.push(fourCcBytes(shared));
  const raw = packets.map((p, i) => ({ trackId: tracks[i]!.trackId, fourCc: p.codec, body: packetBody(p) }));
  return Buffer.concat([...head, ...writeTracks(layout, raw)]);
}

/**
 * Writes an audio message body: the enhanced form for every kind, the legacy one for AAC packets
 * marked `legacy`, and legacy formats as they were read. readAudioTag(encodeAudioTag(t)) gives t back.
 */
export function encodeAudioTag(tag: AudioTag): Buffer {
  switch (tag.kind) {
    case "silence":
      return Buffer.alloc(0);
    case "legacy":
      return Buffer.concat([Buffer.from([(tag.format << 4) | (tag.rateIndex << 2) | (tag.sampleBits === 16 ? 2 : 0) | (tag.stereo ? 1 : 0)]), tag.data]);
    case "multitrack":
      return writeMultitrack(tag.layout, tag.tracks);
    default: {
      const p = writable(tag);
      if ("legacy" in tag && tag.legacy) return writeLegacyAac(p);
      return Buffer.concat([exHeader(PACKET_TYPE_OF_KIND[p.kind], [p]), fourCcBytes(p.codec), packetBody(p)]);
    }
  }
}
