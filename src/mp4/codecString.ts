// The RFC 6381 codec string of a track, as an HLS master playlist's CODECS attribute and MSE's
// isTypeSupported want it, read from the decoder configuration the track carries:
// - avc1.PPCCLL: profile, constraint flags and level of the avcC (ISO/IEC 14496-15).
// - hvc1.<space><profile>.<compatibility>.<tier><level>.<constraints> (14496-15 Annex E).
// - av01.P.LLT.DD (AV1 Codec ISO Media File Format Binding, "Codecs Parameter String").
// - vp09.PP.LL.DD (VP Codec ISO Media File Format Binding, "Codecs Parameter String").
// - mp4a.40.<audio object type> (RFC 6381 3.3) and opus.

import { vpcRecord } from "./configs";
import type { Mp4Track } from "./track";

const hex2 = (n: number) => n.toString(16).padStart(2, "0");
const dec2 = (n: number) => n.toString().padStart(2, "0");

export function codecString(track: Pick<Mp4Track, "codec" | "config">): string {
  switch (track.codec) {
    case "avc1":
      return avcString(track.config);
    case "hvc1":
      return hevcString(track.config);
    case "av01":
      return av1String(track.config);
    case "vp09":
      return vp9String(track.config);
    case "mp4a":
      return `mp4a.40.${aacObjectType(track.config)}`;
    case "Opus":
      return "opus";
  }
}

function need(config: Buffer, bytes: number, what: string): void {
  if (config.length < bytes) throw new RangeError(`a ${what} of ${config.length} bytes: it has at least ${bytes}`);
}

function avcString(avcC: Buffer): string {
  need(avcC, 4, "AVCDecoderConfigurationRecord");
  return `avc1.${hex2(avcC[1]!)}${hex2(avcC[2]!)}${hex2(avcC[3]!)}`;
}

function hevcString(hvcC: Buffer): string {
  need(hvcC, 13, "HEVCDecoderConfigurationRecord");
  const space = hvcC[1]! >> 6;
  const tier = (hvcC[1]! >> 5) & 1;
  const profile = hvcC[1]! & 0x1f;
  // The 32 compatibility flags in reverse bit order, in hex without leading zeros.
  let compatibility = 0;
  const flags = hvcC.readUInt32BE(2);
  for (let bit = 0; bit < 32; bit++) if (flags & (1 << bit)) compatibility |= 1 << (31 - bit);
  // The six constraint bytes, each in hex, trailing zero bytes left out.
  const constraints = [...hvcC.subarray(6, 12)].map((b) => b.toString(16));
  while (constraints.length > 0 && constraints[constraints.length - 1] === "0") constraints.pop();
  const head = `hvc1.${["", "A", "B", "C"][space]}${profile}.${(compatibility >>> 0).toString(16)}.${tier ? "H" : "L"}${hvcC[12]!}`;
  return [head, ...constraints].join(".");
}

function av1String(av1C: Buffer): string {
  need(av1C, 3, "AV1CodecConfigurationRecord");
  const profile = av1C[1]! >> 5;
  const level = av1C[1]! & 0x1f;
  const tier = av1C[2]! >> 7 ? "H" : "M";
  const highBitDepth = (av1C[2]! >> 6) & 1;
  const twelveBit = (av1C[2]! >> 5) & 1;
  const depth = highBitDepth ? (profile === 2 && twelveBit ? 12 : 10) : 8;
  return `av01.${profile}.${dec2(level)}${tier}.${dec2(depth)}`;
}

function vp9String(config: Buffer): string {
  const record = vpcRecord(config);
  return `vp09.${dec2(record[0]!)}.${dec2(record[1]!)}.${dec2(record[2]! >> 4)}`;
}

/** The audio object type: 5 bits, 31 escaping to 32 + the next 6 bits (ISO/IEC 14496-3 1.6.2.1). */
function aacObjectType(asc: Buffer): number {
  need(asc, 2, "AudioSpecificConfig");
  const aot = asc[0]! >> 3;
  return aot === 31 ? 32 + (((asc[0]! & 0x07) << 3) | (asc[1]! >> 5)) : aot;
}
