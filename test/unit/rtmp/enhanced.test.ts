import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { Amf0EcmaArray, decodeAmf0, encodeAmf0, type Amf0Object } from "../../../src/rtmp/amf0";
import {
  CapsEx,
  clientSupports,
  connectCapsReply,
  encodeAudioTag,
  encodeVideoTag,
  EnhancedRtmpError,
  FourCcInfo,
  readAudioTag,
  readConnectCaps,
  readVideoTag,
  reconnectRequestStatus,
  type AudioTag,
  type VideoTag,
} from "../../../src/rtmp/enhanced";
import { encodeFlvTag, FlvReader, FlvTagType, flvHeader } from "../../../src/rtmp/flv";

/** Bytes from numbers, FourCC strings and buffers, so each table row reads like the wire. */
function b(...parts: (number | string | Buffer | number[])[]): Buffer {
  return Buffer.concat(parts.map((p) => (typeof p === "number" ? Buffer.from([p]) : typeof p === "string" ? Buffer.from(p, "latin1") : Buffer.from(p))));
}
/** A UI24 size. */
const u24 = (n: number) => [(n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];

const REC = b(1, 2, 3, 4); // stands in for a configuration record: opaque to the codec layer
const NALU = b(0, 0, 0, 2, 0x26, 0x01);
const NANO = 123_456; // 0x01e240
const color = ["colorInfo", { colorConfig: { bitDepth: 10, colorPrimaries: 9, transferCharacteristics: 16, matrixCoefficients: 9 } }];

// [what, bytes, parsed, canonical]: canonical rows are exactly what the encoder writes for that value.
const videoCases: [string, Buffer, VideoTag, boolean][] = [
  ["legacy AVC sequence header", b(0x17, 0, 0, 0, 0, REC), { kind: "config", codec: "avc1", record: REC, legacy: true }, true],
  ["legacy AVC NALUs with a negative composition time", b(0x27, 1, 0xff, 0xff, 0xfe, NALU), { kind: "frame", codec: "avc1", frameType: 2, keyframe: false, compositionMs: -2, data: NALU, legacy: true }, true],
  ["legacy AVC keyframe", b(0x17, 1, 0, 0, 40, NALU), { kind: "frame", codec: "avc1", frameType: 1, keyframe: true, compositionMs: 40, data: NALU, legacy: true }, true],
  ["legacy AVC end of sequence", b(0x17, 2, 0, 0, 0), { kind: "end", codec: "avc1", legacy: true }, true],
  ["legacy HEVC (codec id 12), by id only", b(0x1c, 1, 2, 3), { kind: "legacy", codecId: 12, codecName: "hevc", frameType: 1, keyframe: true, data: b(1, 2, 3) }, true],
  ["legacy AV1 (codec id 13), by id only", b(0x2d, 9), { kind: "legacy", codecId: 13, codecName: "av1", frameType: 2, keyframe: false, data: b(9) }, true],
  ["legacy Sorenson H.263, disposable", b(0x32, 7), { kind: "legacy", codecId: 2, codecName: "h263", frameType: 3, keyframe: false, data: b(7) }, true],
  ["legacy command frame: start of seek", b(0x57, 0), { kind: "command", command: 0, codecId: 7 }, true],
  ["SequenceStart hvc1 (hvcC)", b(0x90, "hvc1", REC), { kind: "config", codec: "hvc1", record: REC }, true],
  ["SequenceStart av01 (av1C)", b(0x90, "av01", REC), { kind: "config", codec: "av01", record: REC }, true],
  ["SequenceStart vp09 (vpcC)", b(0x90, "vp09", REC), { kind: "config", codec: "vp09", record: REC }, true],
  ["SequenceStart avc1 (avcC)", b(0x90, "avc1", REC), { kind: "config", codec: "avc1", record: REC }, true],
  ["CodedFrames hvc1 with SI24 composition time", b(0x91, "hvc1", 0, 0, 40, NALU), { kind: "frame", codec: "hvc1", frameType: 1, keyframe: true, compositionMs: 40, data: NALU }, true],
  ["CodedFrames avc1 with a negative composition time", b(0xa1, "avc1", 0xff, 0xff, 0xff, NALU), { kind: "frame", codec: "avc1", frameType: 2, keyframe: false, compositionMs: -1, data: NALU }, true],
  ["CodedFrames hvc1 with a zero composition time", b(0xa1, "hvc1", 0, 0, 0, NALU), { kind: "frame", codec: "hvc1", frameType: 2, keyframe: false, compositionMs: 0, data: NALU }, false],
  ["CodedFrames av01: no composition time", b(0x91, "av01", 0x12, 0), { kind: "frame", codec: "av01", frameType: 1, keyframe: true, compositionMs: 0, data: b(0x12, 0) }, true],
  ["CodedFrames vp09: no composition time", b(0xa1, "vp09", 0x86), { kind: "frame", codec: "vp09", frameType: 2, keyframe: false, compositionMs: 0, data: b(0x86) }, true],
  ["CodedFramesX avc1", b(0xa3, "avc1", NALU), { kind: "frame", codec: "avc1", frameType: 2, keyframe: false, compositionMs: 0, data: NALU }, true],
  ["CodedFramesX hvc1, generated keyframe", b(0xc3, "hvc1", NALU), { kind: "frame", codec: "hvc1", frameType: 4, keyframe: true, compositionMs: 0, data: NALU }, true],
  ["SequenceEnd av01", b(0x92, "av01"), { kind: "end", codec: "av01" }, true],
  ["Metadata colorInfo (frame type ignored)", b(0xd4, "hvc1", encodeAmf0(color)), { kind: "metadata", codec: "hvc1", values: color }, true],
  ["MPEG2TSSequenceStart av01", b(0x95, "av01", 0x80, 4), { kind: "tsConfig", codec: "av01", descriptor: b(0x80, 4) }, true],
  ["enhanced command frame: end of seek", b(0xd0, 1), { kind: "command", command: 1 }, true],
  ["an unknown FourCC is reported, not thrown", b(0x91, "vvc1", 0, 0, 0, NALU), { kind: "unsupported", fourCc: "vvc1", reason: expect.stringMatching(/vvc1/) as unknown as string }, false],
  ["ModEx TimestampOffsetNano, then CodedFrames", b(0x97, 2, 0x01, 0xe2, 0x40, 0x01, "hvc1", 0, 0, 5, NALU), { kind: "frame", codec: "hvc1", frameType: 1, keyframe: true, compositionMs: 5, nanoOffset: NANO, data: NALU }, true],
  ["ModEx with a 16-bit size (UI8 255 means UI16 + 1 follows)", b(0xa7, 0xff, 0, 3, 0x0f, 0x42, 0x3f, 0xee, 0x03, "avc1", NALU), { kind: "frame", codec: "avc1", frameType: 2, keyframe: false, compositionMs: 0, nanoOffset: 999_999, data: NALU }, false],
  ["an unknown ModEx type is skipped by its size", b(0xa7, 0, 0xaa, 0x13, "avc1", NALU), { kind: "frame", codec: "avc1", frameType: 2, keyframe: false, compositionMs: 0, data: NALU }, false],
  ["two ModEx prefixes in a row", b(0xa7, 0, 0xaa, 0x17, 2, 0, 0, 7, 0x03, "avc1", NALU), { kind: "frame", codec: "avc1", frameType: 2, keyframe: false, compositionMs: 0, nanoOffset: 7, data: NALU }, false],
  [
    "Multitrack OneTrack av01 frames",
    b(0x96, 0x01, "av01", 4, 0x12, 0),
    { kind: "multitrack", layout: "oneTrack", tracks: [{ trackId: 4, packet: { kind: "frame", codec: "av01", frameType: 1, keyframe: true, compositionMs: 0, data: b(0x12, 0) } }] },
    true,
  ],
  [
    "Multitrack ManyTracks, two hvc1 tracks of CodedFramesX",
    b(0xa6, 0x13, "hvc1", 0, u24(NALU.length), NALU, 1, u24(2), 0xaa, 0xbb),
    {
      kind: "multitrack",
      layout: "manyTracks",
      tracks: [
        { trackId: 0, packet: { kind: "frame", codec: "hvc1", frameType: 2, keyframe: false, compositionMs: 0, data: NALU } },
        { trackId: 1, packet: { kind: "frame", codec: "hvc1", frameType: 2, keyframe: false, compositionMs: 0, data: b(0xaa, 0xbb) } },
      ],
    },
    true,
  ],
  [
    "Multitrack ManyTracksManyCodecs, three sequence starts",
    b(0x96, 0x20, "avc1", 0, u24(4), REC, "hvc1", 1, u24(1), 9, "av01", 2, u24(0)),
    {
      kind: "multitrack",
      layout: "manyTracksManyCodecs",
      tracks: [
        { trackId: 0, packet: { kind: "config", codec: "avc1", record: REC } },
        { trackId: 1, packet: { kind: "config", codec: "hvc1", record: b(9) } },
        { trackId: 2, packet: { kind: "config", codec: "av01", record: b() } },
      ],
    },
    true,
  ],
  [
    "Multitrack ManyTracksManyCodecs CodedFrames: SI24 for hvc1, none for vp09",
    b(0x96, 0x21, "hvc1", 0, u24(3 + NALU.length), 0, 0, 0, NALU, "vp09", 1, u24(1), 0x86),
    {
      kind: "multitrack",
      layout: "manyTracksManyCodecs",
      tracks: [
        { trackId: 0, packet: { kind: "frame", codec: "hvc1", frameType: 1, keyframe: true, compositionMs: 0, data: NALU } },
        { trackId: 1, packet: { kind: "frame", codec: "vp09", frameType: 1, keyframe: true, compositionMs: 0, data: b(0x86) } },
      ],
    },
    true,
  ],
  [
    "ModEx nano offset before a multitrack message applies to every track",
    b(0x97, 2, 0x01, 0xe2, 0x40, 0x06, 0x11, "hvc1", 0, u24(3 + 1), 0, 0, 2, 0xa, 1, u24(3 + 1), 0, 0, 3, 0xb),
    {
      kind: "multitrack",
      layout: "manyTracks",
      tracks: [
        { trackId: 0, packet: { kind: "frame", codec: "hvc1", frameType: 1, keyframe: true, compositionMs: 2, nanoOffset: NANO, data: b(0xa) } },
        { trackId: 1, packet: { kind: "frame", codec: "hvc1", frameType: 1, keyframe: true, compositionMs: 3, nanoOffset: NANO, data: b(0xb) } },
      ],
    },
    true,
  ],
  [
    "a track of an unknown codec is reported while the others are read",
    b(0x96, 0x22, "vp08", 0, u24(1), 7, "av01", 1, u24(0)),
    { kind: "multitrack", layout: "manyTracksManyCodecs", tracks: [{ trackId: 0, packet: { kind: "unsupported", fourCc: "vp08", reason: expect.any(String) as unknown as string } }, { trackId: 1, packet: { kind: "end", codec: "av01" } }] },
    false,
  ],
];

const videoErrors: [string, Buffer, RegExp][] = [
  ["an empty message", b(), /video header/],
  ["a legacy AVC header cut short", b(0x17, 1, 0), /composition time/],
  ["an AVCPacketType of 3", b(0x17, 3, 0, 0, 0), /AVCPacketType of 3/],
  ["an unknown legacy codec id", b(0x18, 0), /legacy video codec id of 8/],
  ["a legacy frame type of 0", b(0x07, 1, 0, 0, 0), /frame type of 0/],
  ["a legacy command without its byte", b(0x57), /video command/],
  ["a FourCC cut short", b(0x91, "hv"), /video FourCC/],
  ["a composition time cut short", b(0x91, "hvc1", 0, 0), /composition time/],
  ["an unknown packet type (8)", b(0x98, "hvc1"), /packet type of 8/],
  ["an enhanced frame type of 0", b(0x81, "hvc1", 0, 0, 0), /frame type of 0/],
  ["an enhanced frame type of 6", b(0xe3, "hvc1"), /frame type of 6/],
  ["ModEx data past the end", b(0x97, 5, 1, 2), /ModEx data/],
  ["a ModEx 16-bit size cut short", b(0x97, 0xff, 0), /ModEx 16-bit data size/],
  ["ModEx without the type byte", b(0x97, 2, 0, 0, 1), /ModEx type/],
  ["a TimestampOffsetNano of 2 bytes", b(0x97, 1, 0, 0, 0x01, "hvc1", 0, 0, 0), /TimestampOffsetNano of 2 bytes/],
  ["a TimestampOffsetNano of 1 000 000 ns", b(0x97, 2, 0x0f, 0x42, 0x40, 0x01, "hvc1", 0, 0, 0), /TimestampOffsetNano of 1000000 ns/],
  ["an AvMultitrackType of 3", b(0x96, 0x31, "hvc1", 0), /AvMultitrackType of 3/],
  ["Multitrack inside Multitrack", b(0x96, 0x06, "hvc1", 0), /packet type of 6 inside a multitrack/],
  ["ModEx inside Multitrack", b(0x96, 0x07, "hvc1", 0), /packet type of 7 inside a multitrack/],
  ["a track size past the end", b(0x96, 0x13, "hvc1", 0, u24(9), 1, 2), /track 0/],
  ["a track header cut short", b(0x96, 0x13, "hvc1", 0, 0), /track size/],
  ["a ManyTracks message without tracks", b(0x96, 0x13, "hvc1"), /without tracks/],
  ["an unknown packet type inside Multitrack", b(0x96, 0x08, "hvc1", 0), /packet type of 8/],
  ["Metadata that is not AMF0", b(0xd4, "hvc1", 0xff), /not AMF0/],
  ["an enhanced command without its byte", b(0xd0), /video command/],
];

const OPUS_HEAD = b("OpusHead", 1, 2, 0x38, 1, 0x80, 0xbb, 0, 0, 0, 0, 0);
const ASC = b(0x12, 0x10);
const AUDIO = b(0x21, 0x10, 0x04);

const audioCases: [string, Buffer, AudioTag, boolean][] = [
  ["an empty message: silence", b(), { kind: "silence" }, true],
  ["legacy AAC sequence header", b(0xaf, 0, ASC), { kind: "config", codec: "mp4a", config: ASC, legacy: true }, true],
  ["legacy AAC raw", b(0xaf, 1, AUDIO), { kind: "frame", codec: "mp4a", data: AUDIO, legacy: true }, true],
  ["legacy MP3, 44 kHz 16-bit stereo", b(0x2f, AUDIO), { kind: "legacy", format: 2, formatName: "mp3", rateIndex: 3, sampleBits: 16, stereo: true, data: AUDIO }, true],
  ["legacy Nellymoser 8 kHz, 5.5 kHz 16-bit mono", b(0x52, AUDIO), { kind: "legacy", format: 5, formatName: "nellymoser-8k-mono", rateIndex: 0, sampleBits: 16, stereo: false, data: AUDIO }, true],
  ["legacy G.711 mu-law, 8-bit", b(0x84, AUDIO), { kind: "legacy", format: 8, formatName: "g711-mulaw", rateIndex: 1, sampleBits: 8, stereo: false, data: AUDIO }, true],
  ["legacy Speex", b(0xb6, AUDIO), { kind: "legacy", format: 11, formatName: "speex", rateIndex: 1, sampleBits: 16, stereo: false, data: AUDIO }, true],
  ["SequenceStart Opus (ID header)", b(0x90, "Opus", OPUS_HEAD), { kind: "config", codec: "Opus", config: OPUS_HEAD }, true],
  ["SequenceStart mp4a (AudioSpecificConfig)", b(0x90, "mp4a", ASC), { kind: "config", codec: "mp4a", config: ASC }, true],
  ["SequenceStart fLaC", b(0x90, "fLaC", "fLaC", 0x80), { kind: "config", codec: "fLaC", config: b("fLaC", 0x80) }, true],
  ["CodedFrames Opus", b(0x91, "Opus", AUDIO), { kind: "frame", codec: "Opus", data: AUDIO }, true],
  ["CodedFrames ac-3", b(0x91, "ac-3", 0x0b, 0x77), { kind: "frame", codec: "ac-3", data: b(0x0b, 0x77) }, true],
  ["CodedFrames ec-3", b(0x91, "ec-3", 0x0b, 0x77), { kind: "frame", codec: "ec-3", data: b(0x0b, 0x77) }, true],
  ["CodedFrames .mp3", b(0x91, ".mp3", 0xff, 0xfb), { kind: "frame", codec: ".mp3", data: b(0xff, 0xfb) }, true],
  ["SequenceEnd Opus", b(0x92, "Opus"), { kind: "end", codec: "Opus" }, true],
  ["MultichannelConfig, unspecified order", b(0x94, "Opus", 0, 2), { kind: "channels", codec: "Opus", order: "unspecified", channelCount: 2 }, true],
  ["MultichannelConfig, native order with a channel mask (5.1)", b(0x94, "Opus", 1, 6, 0, 0, 0, 0x3f), { kind: "channels", codec: "Opus", order: "native", channelCount: 6, channelFlags: 0x3f }, true],
  ["MultichannelConfig, custom order with a mapping", b(0x94, "fLaC", 2, 3, 1, 0, 0xff), { kind: "channels", codec: "fLaC", order: "custom", channelCount: 3, mapping: [1, 0, 0xff] }, true],
  ["an unknown FourCC is reported, not thrown", b(0x91, "alac", AUDIO), { kind: "unsupported", fourCc: "alac", reason: expect.stringMatching(/alac/) as unknown as string }, false],
  ["ModEx TimestampOffsetNano, then CodedFrames", b(0x97, 2, 0x01, 0xe2, 0x40, 0x01, "Opus", AUDIO), { kind: "frame", codec: "Opus", nanoOffset: NANO, data: AUDIO }, true],
  ["ModEx with a 16-bit size", b(0x97, 0xff, 0, 3, 0, 0, 9, 0xee, 0x01, "Opus", AUDIO), { kind: "frame", codec: "Opus", nanoOffset: 9, data: AUDIO }, false],
  ["Multitrack OneTrack", b(0x95, 0x01, "Opus", 3, AUDIO), { kind: "multitrack", layout: "oneTrack", tracks: [{ trackId: 3, packet: { kind: "frame", codec: "Opus", data: AUDIO } }] }, true],
  [
    "Multitrack ManyTracks, two mp4a tracks",
    b(0x95, 0x11, "mp4a", 0, u24(3), AUDIO, 1, u24(1), 0x42),
    {
      kind: "multitrack",
      layout: "manyTracks",
      tracks: [
        { trackId: 0, packet: { kind: "frame", codec: "mp4a", data: AUDIO } },
        { trackId: 1, packet: { kind: "frame", codec: "mp4a", data: b(0x42) } },
      ],
    },
    true,
  ],
  [
    "Multitrack ManyTracksManyCodecs, three sequence starts",
    b(0x95, 0x20, "mp4a", 0, u24(2), ASC, "Opus", 1, u24(OPUS_HEAD.length), OPUS_HEAD, "fLaC", 2, u24(4), "fLaC"),
    {
      kind: "multitrack",
      layout: "manyTracksManyCodecs",
      tracks: [
        { trackId: 0, packet: { kind: "config", codec: "mp4a", config: ASC } },
        { trackId: 1, packet: { kind: "config", codec: "Opus", config: OPUS_HEAD } },
        { trackId: 2, packet: { kind: "config", codec: "fLaC", config: b("fLaC") } },
      ],
    },
    true,
  ],
  [
    "ModEx before Multitrack: one nano offset for both tracks",
    b(0x97, 2, 0, 0, 50, 0x05, 0x11, "Opus", 0, u24(1), 0xa, 1, u24(1), 0xb),
    {
      kind: "multitrack",
      layout: "manyTracks",
      tracks: [
        { trackId: 0, packet: { kind: "frame", codec: "Opus", nanoOffset: 50, data: b(0xa) } },
        { trackId: 1, packet: { kind: "frame", codec: "Opus", nanoOffset: 50, data: b(0xb) } },
      ],
    },
    true,
  ],
];

const audioErrors: [string, Buffer, RegExp][] = [
  ["a legacy AAC header cut short", b(0xaf), /AACPacketType/],
  ["an AACPacketType of 2", b(0xaf, 2), /AACPacketType of 2/],
  ["the reserved sound format 12", b(0xc0, 1), /sound format of 12/],
  ["the reserved packet type 3", b(0x93, "Opus"), /packet type of 3/],
  ["the reserved packet type 6", b(0x96, "Opus"), /packet type of 6/],
  ["a packet type of 8", b(0x98, "Opus"), /packet type of 8/],
  ["a FourCC cut short", b(0x91, "Op"), /audio FourCC/],
  ["a channel order of 3", b(0x94, "Opus", 3, 2), /channel order of 3/],
  ["a custom mapping cut short", b(0x94, "Opus", 2, 3, 0), /channel mapping/],
  ["a native channel mask cut short", b(0x94, "Opus", 1, 6, 0, 0), /channel flags/],
  ["a channel count missing", b(0x94, "Opus", 0), /channel count/],
  ["Multitrack inside Multitrack", b(0x95, 0x15, "Opus", 0), /packet type of 5 inside a multitrack/],
  ["ModEx inside Multitrack", b(0x95, 0x17, "Opus", 0), /packet type of 7 inside a multitrack/],
  ["an AvMultitrackType of 4", b(0x95, 0x41, "Opus", 0), /AvMultitrackType of 4/],
  ["a track size past the end", b(0x95, 0x11, "Opus", 0, u24(2), 1), /track 0/],
  ["a ManyTracksManyCodecs message without tracks", b(0x95, 0x21), /without tracks/],
  ["a ModEx 16-bit size cut short", b(0x97, 0xff, 0x00), /ModEx 16-bit data size/],
  ["a TimestampOffsetNano over 999 999 ns", b(0x97, 2, 0x0f, 0x42, 0x40, 0x01, "Opus"), /TimestampOffsetNano of 1000000 ns/],
];

/** Any result, or EnhancedRtmpError: never another exception type. */
function parsesOrRefuses(read: (body: Buffer) => unknown, body: Buffer): "parsed" | "refused" {
  try {
    read(body);
    return "parsed";
  } catch (err) {
    if (err instanceof EnhancedRtmpError) return "refused";
    throw err;
  }
}

describe("readVideoTag", () => {
  it.each(videoCases)("%s", (_what, bytes, expected) => {
    expect(readVideoTag(bytes)).toEqual(expected);
  });

  it.each(videoErrors)("refuses %s", (_what, bytes, message) => {
    expect(() => readVideoTag(bytes)).toThrow(EnhancedRtmpError);
    expect(() => readVideoTag(bytes)).toThrow(message);
  });

  it("parses or refuses every cut of every valid message, never reading past the end", () => {
    for (const [, bytes] of videoCases) for (let n = 0; n <= bytes.length; n++) parsesOrRefuses(readVideoTag, bytes.subarray(0, n));
    expect(parsesOrRefuses(readVideoTag, videoCases[0]![1].subarray(0, 3))).toBe("refused");
  });

  it("throws nothing but EnhancedRtmpError on arbitrary bytes", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => void parsesOrRefuses(readVideoTag, Buffer.from(bytes))), { numRuns: 3000 });
    // Starting with an enhanced header makes the fuzzing reach the ModEx and multitrack paths.
    const enhanced = fc.tuple(fc.integer({ min: 0x80, max: 0xff }), fc.uint8Array({ maxLength: 64 }));
    fc.assert(fc.property(enhanced, ([first, rest]) => void parsesOrRefuses(readVideoTag, Buffer.from([first, ...rest]))), { numRuns: 3000 });
  });
});

describe("readAudioTag", () => {
  it.each(audioCases)("%s", (_what, bytes, expected) => {
    expect(readAudioTag(bytes)).toEqual(expected);
  });

  it.each(audioErrors)("refuses %s", (_what, bytes, message) => {
    expect(() => readAudioTag(bytes)).toThrow(EnhancedRtmpError);
    expect(() => readAudioTag(bytes)).toThrow(message);
  });

  it("parses or refuses every cut of every valid message", () => {
    for (const [, bytes] of audioCases) for (let n = 0; n <= bytes.length; n++) parsesOrRefuses(readAudioTag, bytes.subarray(0, n));
    expect(parsesOrRefuses(readAudioTag, b(0x95, 0x11, "mp4a", 0, 0))).toBe("refused");
  });

  it("throws nothing but EnhancedRtmpError on arbitrary bytes", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => void parsesOrRefuses(readAudioTag, Buffer.from(bytes))), { numRuns: 3000 });
    const enhanced = fc.tuple(fc.integer({ min: 0x90, max: 0x9f }), fc.uint8Array({ maxLength: 64 }));
    fc.assert(fc.property(enhanced, ([first, rest]) => void parsesOrRefuses(readAudioTag, Buffer.from([first, ...rest]))), { numRuns: 3000 });
  });
});

describe("encodeVideoTag / encodeAudioTag", () => {
  const writableVideo = videoCases.filter(([what]) => !/unknown (FourCC|codec)/.test(what));
  const writableAudio = audioCases.filter(([what]) => !/unknown FourCC/.test(what));

  it.each(writableVideo)("video round trip: %s", (_what, bytes, parsed, canonical) => {
    const written = encodeVideoTag(readVideoTag(bytes));
    expect(readVideoTag(written)).toEqual(parsed);
    if (canonical) expect(written.toString("hex")).toBe(bytes.toString("hex"));
  });

  it.each(writableAudio)("audio round trip: %s", (_what, bytes, parsed, canonical) => {
    const written = encodeAudioTag(readAudioTag(bytes));
    expect(readAudioTag(written)).toEqual(parsed);
    if (canonical) expect(written.toString("hex")).toBe(bytes.toString("hex"));
  });

  it("a zero composition time goes out as CodedFramesX, three bytes shorter", () => {
    const frame: VideoTag = { kind: "frame", codec: "hvc1", frameType: 2, keyframe: false, compositionMs: 0, data: NALU };
    expect(encodeVideoTag(frame).toString("hex")).toBe(b(0xa3, "hvc1", NALU).toString("hex"));
  });

  const frame = (over: Partial<Extract<VideoTag, { kind: "frame" }>> = {}): Extract<VideoTag, { kind: "frame" }> => ({ kind: "frame", codec: "hvc1", frameType: 1, keyframe: true, compositionMs: 0, data: NALU, ...over });
  it.each<[string, VideoTag, RegExp]>([
    ["an unsupported packet", { kind: "unsupported", fourCc: "vvc1", reason: "" }, /unsupported FourCC/],
    ["HEVC in the legacy form", { ...frame(), legacy: true }, /legacy video form carries AVC only/],
    ["a nano offset of 1 000 000", frame({ nanoOffset: 1_000_000 }), /nanosecond offset/],
    ["a composition time past SI24", frame({ compositionMs: 0x800000 }), /signed 24-bit/],
    ["a OneTrack message of two tracks", { kind: "multitrack", layout: "oneTrack", tracks: [{ trackId: 0, packet: frame() }, { trackId: 1, packet: frame() }] }, /OneTrack message with 2 tracks/],
    ["ManyTracks with two codecs", { kind: "multitrack", layout: "manyTracks", tracks: [{ trackId: 0, packet: frame() }, { trackId: 1, packet: frame({ codec: "av01" }) }] }, /use manyTracksManyCodecs/],
    ["tracks with different frame types", { kind: "multitrack", layout: "manyTracks", tracks: [{ trackId: 0, packet: frame() }, { trackId: 1, packet: frame({ frameType: 2 }) }] }, /different frame types/],
    ["tracks with different nano offsets", { kind: "multitrack", layout: "manyTracks", tracks: [{ trackId: 0, packet: frame({ nanoOffset: 1 }) }, { trackId: 1, packet: frame() }] }, /different nanosecond offsets/],
    ["tracks of different kinds", { kind: "multitrack", layout: "manyTracks", tracks: [{ trackId: 0, packet: frame() }, { trackId: 1, packet: { kind: "end", codec: "hvc1" } }] }, /different packet kinds/],
    ["a track id of 256", { kind: "multitrack", layout: "manyTracks", tracks: [{ trackId: 256, packet: frame() }] }, /track id of 256/],
    ["no tracks", { kind: "multitrack", layout: "manyTracks", tracks: [] }, /without tracks/],
  ])("refuses to write %s", (_what, tag, message) => {
    expect(() => encodeVideoTag(tag)).toThrow(EnhancedRtmpError);
    expect(() => encodeVideoTag(tag)).toThrow(message);
  });

  it.each<[string, AudioTag, RegExp]>([
    ["Opus in the legacy form", { kind: "frame", codec: "Opus", data: AUDIO, legacy: true }, /legacy audio form carries AAC/],
    ["a custom mapping that does not match the channel count", { kind: "channels", codec: "Opus", order: "custom", channelCount: 2, mapping: [0] }, /1 entries for 2 channels/],
    ["tracks of different kinds", { kind: "multitrack", layout: "manyTracksManyCodecs", tracks: [{ trackId: 0, packet: { kind: "end", codec: "Opus" } }, { trackId: 1, packet: { kind: "frame", codec: "mp4a", data: AUDIO } }] }, /different packet kinds/],
  ])("refuses to write audio: %s", (_what, tag, message) => {
    expect(() => encodeAudioTag(tag)).toThrow(EnhancedRtmpError);
    expect(() => encodeAudioTag(tag)).toThrow(message);
  });
});

describe("connect capabilities", () => {
  const client: Amf0Object = {
    app: "live",
    tcUrl: "rtmp://example.test/live",
    fourCcList: ["av01", "hvc1", "Opus", 7],
    videoFourCcInfoMap: { hvc1: FourCcInfo.canDecode | FourCcInfo.canEncode, av01: FourCcInfo.canEncode, bad: "x" },
    audioFourCcInfoMap: new Amf0EcmaArray({ "*": FourCcInfo.canForward }),
    capsEx: CapsEx.reconnect | CapsEx.multitrack | CapsEx.modEx | CapsEx.timestampNanoOffset,
  };

  it("reads what an E-RTMP client announces, after a trip through AMF0", () => {
    const decoded = decodeAmf0(encodeAmf0([client]))[0] as Amf0Object;
    expect(readConnectCaps(decoded)).toEqual({
      fourCcList: ["av01", "hvc1", "Opus"],
      videoFourCcInfoMap: { hvc1: 3, av01: 2 },
      audioFourCcInfoMap: { "*": 4 },
      capsEx: 0x0f,
    });
  });

  it.each<[string, Amf0Object]>([
    ["a legacy client", { app: "live", flashVer: "FMLE/3.0", tcUrl: "rtmp://example.test/live" }],
    ["ill-typed properties", { fourCcList: "hvc1", videoFourCcInfoMap: [1, 2], audioFourCcInfoMap: null, capsEx: -1 }],
    ["a fractional capsEx", { capsEx: 1.5, videoFourCcInfoMap: new Date(0) }],
  ])("gives %s legacy defaults", (_what, obj) => {
    expect(readConnectCaps(obj)).toEqual({ fourCcList: [], videoFourCcInfoMap: {}, audioFourCcInfoMap: {}, capsEx: 0 });
  });

  it.each<[string, "video" | "audio", string, number, boolean]>([
    ["a codec the map lists with that flag", "video", "hvc1", FourCcInfo.canDecode, true],
    ["a codec the map lists without that flag", "video", "av01", FourCcInfo.canDecode, false],
    ["a codec the map does not list", "video", "vp09", FourCcInfo.canEncode, false],
    ["any codec under the wildcard", "audio", "fLaC", FourCcInfo.canForward, true],
    ["a flag the wildcard does not give", "audio", "Opus", FourCcInfo.canDecode, false],
  ])("clientSupports: %s", (_what, media, fourCc, flag, expected) => {
    expect(clientSupports(readConnectCaps(client), media, fourCc, flag)).toBe(expected);
  });

  it("falls back to fourCcList for a client of the original E-RTMP", () => {
    const caps = readConnectCaps({ fourCcList: ["hvc1"] });
    expect(clientSupports(caps, "video", "hvc1", FourCcInfo.canDecode)).toBe(true);
    expect(clientSupports(caps, "video", "av01", FourCcInfo.canDecode)).toBe(false);
    expect(clientSupports(readConnectCaps({ fourCcList: ["*"] }), "audio", "ac-3", FourCcInfo.canForward)).toBe(true);
  });

  it("announces the server's codecs and extensions, in a form its own reader reads back", () => {
    const reply = connectCapsReply({ video: { hvc1: FourCcInfo.canForward, avc1: FourCcInfo.canForward }, audio: { mp4a: FourCcInfo.canForward, Opus: FourCcInfo.canForward }, capsEx: CapsEx.reconnect | CapsEx.multitrack });
    expect(reply).toEqual({
      fourCcList: ["hvc1", "avc1", "mp4a", "Opus"],
      videoFourCcInfoMap: { hvc1: 4, avc1: 4 },
      audioFourCcInfoMap: { mp4a: 4, Opus: 4 },
      capsEx: 3,
    });
    const properties = { fmsVer: "FMS/3,0,1,123", capabilities: 31, ...reply };
    expect(readConnectCaps(decodeAmf0(encodeAmf0([properties]))[0] as Amf0Object)).toEqual({ fourCcList: reply["fourCcList"], videoFourCcInfoMap: reply["videoFourCcInfoMap"], audioFourCcInfoMap: reply["audioFourCcInfoMap"], capsEx: 3 });
  });
});

describe("reconnectRequestStatus", () => {
  it.each<[string, string | undefined, string | undefined, Amf0Object]>([
    ["to the same server", undefined, undefined, { level: "status", code: "NetConnection.Connect.ReconnectRequest" }],
    ["elsewhere, with a reason", "rtmp://edge2.example.test/live", "The streaming server is undergoing updates.", { level: "status", code: "NetConnection.Connect.ReconnectRequest", description: "The streaming server is undergoing updates.", tcUrl: "rtmp://edge2.example.test/live" }],
    ["to a relative URI", "/live", undefined, { level: "status", code: "NetConnection.Connect.ReconnectRequest", tcUrl: "/live" }],
  ])("asks a client to reconnect %s", (_what, tcUrl, description, expected) => {
    const info = reconnectRequestStatus(tcUrl, description);
    expect(info).toEqual(expected);
    // As the onStatus command carries it: name, transaction 0, null command object, info object; no AMF undefined in it.
    const command = encodeAmf0(["onStatus", 0, null, info]);
    expect(Object.values(info)).not.toContain(undefined);
    expect(decodeAmf0(command)).toEqual(["onStatus", 0, null, expected]);
  });
});

/** NAL units of an Annex B stream, start codes dropped. */
function splitAnnexB(es: Buffer): Buffer[] {
  const starts: number[] = [];
  for (let i = 0; i + 2 < es.length; i++) if (es[i] === 0 && es[i + 1] === 0 && es[i + 2] === 1) starts.push(i + 3);
  return starts.map((start, k) => {
    let end = k + 1 < starts.length ? starts[k + 1]! - 3 : es.length;
    while (end > start && es[end - 1] === 0) end--; // the zero of a 4-byte start code, or trailing zeros
    return es.subarray(start, end);
  });
}

const nalType = (nal: Buffer) => (nal[0]! >> 1) & 0x3f;

/** Access units: a new one starts at a picture's first slice, or at VPS/SPS/PPS/AUD/prefix SEI after a picture. */
function accessUnits(nals: Buffer[]): Buffer[][] {
  const units: Buffer[][] = [];
  let unit: Buffer[] = [];
  let hasPicture = false;
  for (const nal of nals) {
    const vcl = nalType(nal) < 32;
    const starts = hasPicture && ((vcl && (nal[2]! & 0x80) !== 0) || (!vcl && [32, 33, 34, 35, 39].includes(nalType(nal))));
    if (starts) {
      units.push(unit);
      unit = [];
      hasPicture = false;
    }
    unit.push(nal);
    hasPicture ||= vcl;
  }
  if (unit.length > 0) units.push(unit);
  return units;
}

/** The NAL arrays of an HEVCDecoderConfigurationRecord (ISO/IEC 14496-15, 8.3.3), walked with bounds checks. */
function hvcCArrays(record: Buffer): Map<number, Buffer[]> {
  const arrays = new Map<number, Buffer[]>();
  let at = 23;
  for (let n = record[22]!; n > 0; n--) {
    const type = record[at]! & 0x3f;
    const count = record.readUInt16BE(at + 1);
    at += 3;
    const nals: Buffer[] = [];
    for (let k = 0; k < count; k++) {
      const len = record.readUInt16BE(at);
      nals.push(record.subarray(at + 2, at + 2 + len));
      at += 2 + len;
    }
    arrays.set(type, nals);
  }
  expect(at).toBe(record.length);
  return arrays;
}

const lengthPrefixed = (nals: Buffer[]) => Buffer.concat(nals.flatMap((nal) => [Buffer.from([0, 0, (nal.length >> 8) & 0xff, nal.length & 0xff]), nal]));

describe("real HEVC from libx265, wrapped as Enhanced RTMP and read back", () => {
  let dir = "";
  let es = Buffer.alloc(0);
  let record = Buffer.alloc(0);
  let probedKeys: boolean[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "onair-ertmp-"));
    const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"] }).toString();
    run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10", "-t", "1", "-c:v", "libx265", "-x265-params", "log-level=error", "-f", "hevc", join(dir, "es.hevc")]);
    // ffmpeg's MP4 muxer builds the hvcC from the same parameter sets: a record made by an independent writer.
    run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", join(dir, "es.hevc"), "-c", "copy", "-f", "mp4", join(dir, "out.mp4")]);
    es = readFileSync(join(dir, "es.hevc"));
    const mp4 = readFileSync(join(dir, "out.mp4"));
    const at = mp4.indexOf("hvcC");
    record = Buffer.from(mp4.subarray(at + 4, at - 4 + mp4.readUInt32BE(at - 4)));
    probedKeys = run("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=flags", "-of", "csv=p=0", join(dir, "out.mp4")])
      .trim()
      .split("\n")
      .map((flags) => flags.startsWith("K"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("carries the hvcC and every access unit through the FLV layer and back, keyframes where ffprobe sees them", () => {
    const units = accessUnits(splitAnnexB(es));
    expect(units).toHaveLength(probedKeys.length);
    const params = new Map([32, 33, 34].map((t) => [t, units[0]!.filter((nal) => nalType(nal) === t)]));
    expect(hvcCArrays(record)).toEqual(params);

    const tags: VideoTag[] = [
      { kind: "config", codec: "hvc1", record },
      ...units.map((unit, i): VideoTag => {
        const keyframe = unit.some((nal) => nalType(nal) >= 16 && nalType(nal) <= 23);
        return { kind: "frame", codec: "hvc1", frameType: keyframe ? 1 : 2, keyframe, compositionMs: i % 3 === 1 ? 100 : 0, data: lengthPrefixed(unit) };
      }),
      { kind: "end", codec: "hvc1" },
    ];
    const flv = Buffer.concat([flvHeader({ audio: false, video: true }), ...tags.map((tag, i) => encodeFlvTag({ type: FlvTagType.video, timestamp: i * 100, data: encodeVideoTag(tag) }))]);
    const back = new FlvReader().push(flv).map((t) => readVideoTag(t.data));
    expect(back).toEqual(tags);

    const frames = back.filter((t): t is Extract<VideoTag, { kind: "frame" }> => t.kind === "frame");
    expect(frames.map((f) => f.keyframe)).toEqual(probedKeys);
    // The payload walks as 4-byte-length NAL units to its exact end, as hvcC's lengthSizeMinusOne (3) says.
    expect(record[21]! & 0x03).toBe(3);
    for (const f of frames) {
      let at = 0;
      while (at < f.data.length) at += 4 + f.data.readUInt32BE(at);
      expect(at).toBe(f.data.length);
    }
  });
});
