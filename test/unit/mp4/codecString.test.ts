import { codecString } from "../../../src/mp4/codecString";
import type { Mp4Track } from "../../../src/mp4/track";

// RFC 6381 codec strings from configuration records, on records real encoders wrote (their
// first bytes; the strings read nothing further) and on hand-made ones for the other branches.

const video = (codec: "avc1" | "hvc1" | "av01" | "vp09", configHex: string): Mp4Track => ({ id: 1, kind: "video", codec, config: Buffer.from(configHex, "hex"), width: 320, height: 240, timescale: 90000 });
const audio = (codec: "mp4a" | "Opus", configHex: string): Mp4Track => ({ id: 2, kind: "audio", codec, config: Buffer.from(configHex, "hex"), channels: 2, sampleRate: 48000, timescale: 48000 });

describe("codecString", () => {
  it.each([
    ["x264 High 3.1", video("avc1", "0164001fffe1"), "avc1.64001f"],
    ["x264 Constrained Baseline 3.0", video("avc1", "0142c01effe1"), "avc1.42c01e"],
    // x265 Main at 960x540 (level 3.0): compatibility 0x60000000 reversed is 6, one constraint byte.
    ["x265 Main 3.0", video("hvc1", "0101600000009000000000005af000fcfdf8f800000f04"), "hvc1.1.6.L90.90"],
    ["x265 Main 10 at 320x240 (level 2.0)", video("hvc1", "0102200000009000000000003cf000fcfdfafa00000f04"), "hvc1.2.4.L60.90"],
    ["high tier, profile space 1, two constraint bytes", video("hvc1", "01610000000080b0000000005d"), "hvc1.A1.0.H93.80.b0"],
    ["no constraint flags at all", video("hvc1", "0101600000000000000000005a"), "hvc1.1.6.L90"],
    ["SVT-AV1 Main at level 2.0, 8 bits", video("av01", "81000c000a0b"), "av01.0.00M.08"],
    ["AV1 Main level 5.1 (13), 10 bits", video("av01", "810d4c"), "av01.0.13M.10"],
    ["AV1 Professional, high tier, 12 bits", video("av01", "8148e0"), "av01.2.08H.12"],
    ["libvpx-vp9 as vpcC holds it (version and flags first)", video("vp09", "010000000014820202020000"), "vp09.00.20.08"],
    ["a VP9 profile 2 record alone, 10 bits", video("vp09", "021fa2010101" + "0000"), "vp09.02.31.10"],
    ["AAC-LC 48 kHz stereo", audio("mp4a", "1190"), "mp4a.40.2"],
    ["HE-AAC (SBR)", audio("mp4a", "2b920800"), "mp4a.40.5"],
    ["an escaped object type (42, USAC)", audio("mp4a", "f94000"), "mp4a.40.42"],
    ["Opus", audio("Opus", "00020138"), "opus"],
  ])("%s", (_, track, expected) => {
    expect(codecString(track)).toBe(expected);
  });

  it("refuses records too short to hold what the string reads", () => {
    expect(() => codecString(video("avc1", "0164"))).toThrow(RangeError);
    expect(() => codecString(video("hvc1", "0101600000009000"))).toThrow(RangeError);
    expect(() => codecString(video("av01", "81"))).toThrow(RangeError);
    expect(() => codecString(audio("mp4a", "11"))).toThrow(RangeError);
  });
});
