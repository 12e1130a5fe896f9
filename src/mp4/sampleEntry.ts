// The sample entry of each codec (the stsd's one entry): the visual or audio fields of ISO/IEC
// 14496-12 12.1.3/12.2.3, then the box holding the decoder configuration: avcC and hvcC (ISO/IEC
// 14496-15), av1C (AV1 Codec ISO Media File Format Binding), vpcC (VP Codec ISO Media File Format
// Binding), esds (ISO/IEC 14496-1 and -14) and dOps (Encapsulation of Opus in ISOBMFF).

import { box, fullBox, i16, u16, u32, u8, zeros } from "./boxes";
import { opusDops, vpcRecord } from "./configs";
import type { AudioTrack, Mp4Track, VideoTrack } from "./track";

/** The only data reference of the dref: the media is in this file. */
const DATA_REFERENCE_INDEX = 1;

export function sampleEntry(track: Mp4Track): Buffer {
  return track.kind === "video" ? visualEntry(track) : audioEntry(track);
}

function visualEntry(track: VideoTrack): Buffer {
  const fields = [
    zeros(6),
    u16(DATA_REFERENCE_INDEX),
    zeros(16), // pre_defined, reserved, pre_defined[3]
    u16(track.width),
    u16(track.height),
    u32(0x0048_0000), // 72 dpi, 16.16
    u32(0x0048_0000),
    u32(0),
    u16(1), // frame_count: one frame per sample
    zeros(32), // compressorname
    u16(0x0018), // depth: colour, no alpha
    i16(-1),
  ];
  return box(track.codec, ...fields, videoConfig(track));
}

function videoConfig(track: VideoTrack): Buffer {
  switch (track.codec) {
    case "avc1":
      return box("avcC", track.config);
    case "hvc1":
      return box("hvcC", track.config);
    case "av01":
      return box("av1C", track.config);
    case "vp09":
      return fullBox("vpcC", 1, 0, vpcRecord(track.config));
  }
}

function audioEntry(track: AudioTrack): Buffer {
  // Opus is always decoded at 48 kHz, whatever rate the source had (the spec fixes the field).
  const rate = track.codec === "Opus" ? 48000 : track.sampleRate;
  const fields = [
    zeros(6),
    u16(DATA_REFERENCE_INDEX),
    zeros(8),
    u16(track.channels),
    u16(16), // samplesize
    zeros(4), // pre_defined, reserved
    // 16.16 fixed point; a rate above 65535 Hz does not fit, and decoders read the config instead.
    u32(rate <= 0xffff ? rate * 0x1_0000 : 0),
  ];
  const config = track.codec === "Opus" ? box("dOps", opusDops(track.config)) : esds(track);
  return box(track.codec, ...fields, config);
}

/** The esds box: an ES_Descriptor with the AudioSpecificConfig as its DecoderSpecificInfo. */
function esds(track: AudioTrack): Buffer {
  const specificInfo = descriptor(0x05, track.config);
  const decoderConfig = descriptor(
    0x04,
    u8(0x40), // objectTypeIndication: MPEG-4 audio
    u8(0x15), // streamType 5 (audio) << 2, upStream 0, reserved 1
    zeros(3), // bufferSizeDB: unknown
    u32(0), // maxBitrate: unknown
    u32(0), // avgBitrate: unknown (a live source's varies)
    specificInfo,
  );
  const slConfig = descriptor(0x06, u8(0x02)); // predefined: MP4 files
  const es = descriptor(0x03, u16(track.id), u8(0), decoderConfig, slConfig);
  return fullBox("esds", 0, 0, es);
}

/** An MPEG-4 descriptor: tag, a length in 7-bit groups (high bit: more follow), payload. */
function descriptor(tag: number, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  const groups: number[] = [];
  let n = body.length;
  do {
    groups.unshift(n & 0x7f);
    n >>>= 7;
  } while (n > 0);
  const length = groups.map((g, i) => (i < groups.length - 1 ? g | 0x80 : g));
  return Buffer.concat([u8(tag), Buffer.from(length), body]);
}
