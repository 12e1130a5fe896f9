// H.264 as FLV carries it (Adobe FLV 10.1, E.4.3.1) turned into what WebRTC's packetizer takes:
// NAL units each behind a 4-byte length, the parameter sets ahead of every keyframe (a viewer
// joins, or changes rendition, at any keyframe). Pure functions of bytes.

/** SPS and PPS from an AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.3.3.1), and its NAL length size. */
export interface AvcConfig {
  lengthSize: number;
  parameterSets: Buffer[];
}

export class AvcError extends Error {
  override readonly name = "AvcError";
}

export function parseAvcConfig(record: Buffer): AvcConfig {
  if (record.length < 7 || record[0] !== 1) throw new AvcError("not an AVCDecoderConfigurationRecord");
  const lengthSize = (record[4]! & 0x03) + 1;
  const parameterSets: Buffer[] = [];
  let at = 5;
  for (const countMask of [0x1f, 0xff]) {
    if (at >= record.length) throw new AvcError("the record ends before its parameter sets");
    const count = record[at]! & countMask;
    at++;
    for (let i = 0; i < count; i++) {
      if (at + 2 > record.length) throw new AvcError("a parameter set's length is cut off");
      const size = record.readUInt16BE(at);
      if (at + 2 + size > record.length) throw new AvcError("a parameter set is cut off");
      parameterSets.push(record.subarray(at + 2, at + 2 + size));
      at += 2 + size;
    }
  }
  return { lengthSize, parameterSets };
}

/** What an FLV video tag's body holds, for H.264; undefined for another codec or an end-of-sequence. */
export type FlvVideo = { kind: "config"; config: AvcConfig } | { kind: "frame"; keyframe: boolean; compositionMs: number; nalus: Buffer };

const AVC_CODEC_ID = 7;

export function readFlvVideo(body: Buffer): FlvVideo | undefined {
  if (body.length < 5 || (body[0]! & 0x0f) !== AVC_CODEC_ID) return undefined;
  const packetType = body[1]!;
  if (packetType === 0) return { kind: "config", config: parseAvcConfig(body.subarray(5)) };
  if (packetType !== 1) return undefined;
  const compositionMs = (body.readIntBE(2, 3));
  return { kind: "frame", keyframe: body[0]! >> 4 === 1, compositionMs, nalus: body.subarray(5) };
}

/** The NAL units of a length-prefixed frame, with `lengthSize`-byte prefixes. */
export function splitNalus(frame: Buffer, lengthSize: number): Buffer[] {
  const nalus: Buffer[] = [];
  for (let at = 0; at < frame.length; ) {
    if (at + lengthSize > frame.length) throw new AvcError("a NAL unit's length is cut off");
    const size = frame.readUIntBE(at, lengthSize);
    if (at + lengthSize + size > frame.length) throw new AvcError("a NAL unit is cut off");
    nalus.push(frame.subarray(at + lengthSize, at + lengthSize + size));
    at += lengthSize + size;
  }
  return nalus;
}

/** NAL units behind 4-byte lengths (libdatachannel's `Length` separator). */
export function lengthPrefixed(nalus: Buffer[]): Buffer {
  const out = Buffer.allocUnsafe(nalus.reduce((n, u) => n + 4 + u.length, 0));
  let at = 0;
  for (const u of nalus) {
    out.writeUInt32BE(u.length, at);
    u.copy(out, at + 4);
    at += 4 + u.length;
  }
  return out;
}

/**
 * A frame as WebRTC sends it: 4-byte lengths, and on a keyframe the parameter sets first (x264
 * writes them only into the sequence header, and a decoder needs them at every join or switch).
 */
export function webrtcFrame(nalus: Buffer, config: AvcConfig, keyframe: boolean): Buffer {
  if (!keyframe && config.lengthSize === 4) return nalus;
  const units = splitNalus(nalus, config.lengthSize);
  return lengthPrefixed(keyframe ? [...config.parameterSets, ...units] : units);
}
