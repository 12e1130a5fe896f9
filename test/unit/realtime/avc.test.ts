import { AvcError, lengthPrefixed, parseAvcConfig, readFlvVideo, splitNalus, webrtcFrame, type AvcConfig } from "../../../src/realtime/avc";

// Inputs built byte by byte from the specs: ISO/IEC 14496-15 5.3.3.1 (AVCDecoderConfigurationRecord)
// and Adobe FLV 10.1 E.4.3.1 (VIDEODATA, AVCVIDEOPACKET).

const SPS = Buffer.from([0x67, 0x64, 0x00, 0x1f, 0xac, 0xd9]);
const SPS2 = Buffer.from([0x67, 0x42, 0xc0, 0x1e]);
const PPS = Buffer.from([0x68, 0xeb, 0xe3, 0xcb]);
const PPS2 = Buffer.from([0x68, 0xce]);
const IDR = Buffer.from([0x65, 0x88, 0x84, 0x00, 0x21]);
const SEI = Buffer.from([0x06, 0x05, 0x01]);
const SLICE = Buffer.from([0x41, 0x9a, 0x21]);

const u16 = (n: number) => [n >> 8, n & 0xff];
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];

/** configurationVersion 1, profile/compat/level, 6 reserved bits + lengthSizeMinusOne, 3 reserved bits + numOfSPS, … numOfPPS, … */
function avcRecord(lengthSizeMinusOne: number, sps: Buffer[], pps: Buffer[], trailer: number[] = []): Buffer {
  return Buffer.from([
    1, 0x64, 0x00, 0x1f,
    0xfc | lengthSizeMinusOne,
    0xe0 | sps.length, ...sps.flatMap((s) => [...u16(s.length), ...s]),
    pps.length, ...pps.flatMap((p) => [...u16(p.length), ...p]),
    ...trailer,
  ]);
}

/** NAL units, each behind a big-endian length of `size` bytes. */
function withLengths(size: 2 | 4, nalus: Buffer[]): Buffer {
  return Buffer.from(nalus.flatMap((n) => [...(size === 4 ? u32(n.length) : u16(n.length)), ...n]));
}

/** An FLV VIDEODATA body: FrameType << 4 | CodecID, then for AVC the AVCPacketType and an SI24 CompositionTime. */
function flvVideo(frameType: number, codecId: number, packetType: number, cts: number, payload: Buffer | number[]): Buffer {
  const c = cts & 0xffffff;
  return Buffer.from([(frameType << 4) | codecId, packetType, c >> 16, (c >> 8) & 0xff, c & 0xff, ...payload]);
}

describe("parseAvcConfig", () => {
  it.each<[string, Buffer, AvcConfig]>([
    ["one SPS and one PPS, 4-byte lengths", avcRecord(3, [SPS], [PPS]), { lengthSize: 4, parameterSets: [SPS, PPS] }],
    ["2-byte lengths", avcRecord(1, [SPS], [PPS]), { lengthSize: 2, parameterSets: [SPS, PPS] }],
    ["1-byte lengths", avcRecord(0, [SPS], [PPS]), { lengthSize: 1, parameterSets: [SPS, PPS] }],
    ["two of each, in order, SPS first", avcRecord(3, [SPS, SPS2], [PPS, PPS2]), { lengthSize: 4, parameterSets: [SPS, SPS2, PPS, PPS2] }],
    ["no PPS", avcRecord(3, [SPS], []), { lengthSize: 4, parameterSets: [SPS] }],
    ["no parameter sets at all (7 bytes)", avcRecord(3, [], []), { lengthSize: 4, parameterSets: [] }],
    // High profile records end with chroma_format, bit depths and SPS extensions (14496-15 5.3.3.1.2).
    ["a High profile trailer", avcRecord(3, [SPS], [PPS], [0xfd, 0xf8, 0xf8, 0x00]), { lengthSize: 4, parameterSets: [SPS, PPS] }],
  ])("%s", (_what, record, expected) => {
    expect(parseAvcConfig(record)).toEqual(expected);
  });

  it("reads the counts from their low bits only, whatever the reserved bits hold", () => {
    const record = avcRecord(1, [SPS], [PPS]);
    // Reserved bits cleared instead of set: lengthSizeMinusOne and numOfSPS are the same.
    record[4] = 0x01;
    record[5] = 0x01;
    expect(parseAvcConfig(record)).toEqual({ lengthSize: 2, parameterSets: [SPS, PPS] });
  });

  const full = avcRecord(3, [SPS], [PPS]);
  it.each<[string, Buffer]>([
    ["configurationVersion 0", Buffer.from([0, ...full.subarray(1)])],
    ["configurationVersion 2", Buffer.from([2, ...full.subarray(1)])],
    ["empty", Buffer.alloc(0)],
    ["six bytes", full.subarray(0, 6)],
    ["an SPS length cut off", Buffer.from([1, 0x64, 0, 0x1f, 0xff, 0xe1, 0x00])],
    ["an SPS cut off", full.subarray(0, 6 + 2 + SPS.length - 1)],
    ["no numOfPPS byte", full.subarray(0, 6 + 2 + SPS.length)],
    ["a PPS length cut off", full.subarray(0, 6 + 2 + SPS.length + 2)],
    ["a PPS cut off", full.subarray(0, full.length - 1)],
    ["more SPS counted than present", avcRecord(3, [SPS], [PPS]).fill(0xe2, 5, 6)],
  ])("refuses %s", (_what, record) => {
    expect(() => parseAvcConfig(record)).toThrow(AvcError);
  });
});

describe("readFlvVideo", () => {
  const frame = withLengths(4, [IDR]);
  it.each<[string, Buffer, ReturnType<typeof readFlvVideo>]>([
    ["a keyframe", flvVideo(1, 7, 1, 0, frame), { kind: "frame", keyframe: true, compositionMs: 0, nalus: frame }],
    ["an inter frame", flvVideo(2, 7, 1, 0, frame), { kind: "frame", keyframe: false, compositionMs: 0, nalus: frame }],
    ["a disposable inter frame", flvVideo(3, 7, 1, 0, frame), { kind: "frame", keyframe: false, compositionMs: 0, nalus: frame }],
    ["a positive composition time", flvVideo(2, 7, 1, 33, frame), { kind: "frame", keyframe: false, compositionMs: 33, nalus: frame }],
    ["a three-byte composition time", flvVideo(2, 7, 1, 0x012345, frame), { kind: "frame", keyframe: false, compositionMs: 0x012345, nalus: frame }],
    ["a negative composition time (SI24)", flvVideo(2, 7, 1, -33, frame), { kind: "frame", keyframe: false, compositionMs: -33, nalus: frame }],
    ["the most negative composition time", flvVideo(2, 7, 1, -0x800000, frame), { kind: "frame", keyframe: false, compositionMs: -0x800000, nalus: frame }],
    ["a frame without NAL units", flvVideo(1, 7, 1, 0, []), { kind: "frame", keyframe: true, compositionMs: 0, nalus: Buffer.alloc(0) }],
    ["a sequence header", flvVideo(1, 7, 0, 0, avcRecord(3, [SPS], [PPS])), { kind: "config", config: { lengthSize: 4, parameterSets: [SPS, PPS] } }],
    ["an end of sequence", flvVideo(1, 7, 2, 0, []), undefined],
    ["Sorenson H.263 (codec 2)", flvVideo(1, 2, 1, 0, frame), undefined],
    ["VP6 (codec 4)", flvVideo(1, 4, 1, 0, frame), undefined],
    ["HEVC in legacy FLV (codec 12)", flvVideo(1, 12, 1, 0, frame), undefined],
    ["four bytes", Buffer.from([0x17, 1, 0, 0]), undefined],
    ["nothing", Buffer.alloc(0), undefined],
  ])("%s", (_what, body, expected) => {
    expect(readFlvVideo(body)).toEqual(expected);
  });

  it("refuses a broken sequence header", () => {
    expect(() => readFlvVideo(flvVideo(1, 7, 0, 0, [0, 0x64, 0, 0x1f, 0xff, 0xe0, 0]))).toThrow(AvcError);
  });
});

describe("splitNalus", () => {
  it.each<[string, Buffer, 1 | 2 | 4, Buffer[]]>([
    ["4-byte lengths", withLengths(4, [SEI, IDR]), 4, [SEI, IDR]],
    ["2-byte lengths", withLengths(2, [SEI, IDR]), 2, [SEI, IDR]],
    ["1-byte lengths", Buffer.from([SEI.length, ...SEI, IDR.length, ...IDR]), 1, [SEI, IDR]],
    ["a unit longer than 255 bytes, 2-byte lengths", withLengths(2, [Buffer.alloc(300, 0x41)]), 2, [Buffer.alloc(300, 0x41)]],
    ["an empty unit among others", withLengths(4, [SEI, Buffer.alloc(0), IDR]), 4, [SEI, Buffer.alloc(0), IDR]],
    ["nothing", Buffer.alloc(0), 4, []],
  ])("%s", (_what, frame, size, expected) => {
    expect(splitNalus(frame, size)).toEqual(expected);
  });

  const two = withLengths(4, [SEI, IDR]);
  it.each<[string, Buffer, number]>([
    ["a 4-byte length cut off", two.subarray(0, 4 + SEI.length + 3), 4],
    ["the last unit cut off", two.subarray(0, two.length - 1), 4],
    ["a 2-byte length cut off", withLengths(2, [SEI, IDR]).subarray(0, 2 + SEI.length + 1), 2],
    ["2-byte lengths read as 4-byte", withLengths(2, [SEI, IDR]), 4],
    ["a length past the end", Buffer.from([0, 0, 0, 9, 0x65]), 4],
  ])("refuses %s", (_what, frame, size) => {
    expect(() => splitNalus(frame, size)).toThrow(AvcError);
  });
});

describe("lengthPrefixed", () => {
  it.each<[string, Buffer[], number[]]>([
    ["two units", [SEI, SLICE], [0, 0, 0, 3, ...SEI, 0, 0, 0, 3, ...SLICE]],
    ["an empty unit", [Buffer.alloc(0)], [0, 0, 0, 0]],
    ["a unit of 258 bytes", [Buffer.alloc(258, 7)], [0, 0, 1, 2, ...Buffer.alloc(258, 7)]],
    ["none", [], []],
  ])("%s", (_what, nalus, bytes) => {
    expect(lengthPrefixed(nalus)).toEqual(Buffer.from(bytes));
  });
});

describe("webrtcFrame", () => {
  const config4: AvcConfig = { lengthSize: 4, parameterSets: [SPS, PPS] };
  const config2: AvcConfig = { lengthSize: 2, parameterSets: [SPS, PPS] };
  const expected = (nalus: Buffer[]) => Buffer.from(nalus.flatMap((n) => [...u32(n.length), ...n]));

  it.each<[string, Buffer, AvcConfig, boolean, Buffer]>([
    ["a keyframe gets SPS and PPS first", withLengths(4, [SEI, IDR]), config4, true, expected([SPS, PPS, SEI, IDR])],
    ["a keyframe of 2-byte lengths: parameter sets first, all with 4-byte lengths", withLengths(2, [IDR]), config2, true, expected([SPS, PPS, IDR])],
    ["an inter frame of 2-byte lengths gets 4-byte lengths", withLengths(2, [SEI, SLICE]), config2, false, expected([SEI, SLICE])],
    ["a keyframe with two SPS keeps the record's order", withLengths(4, [IDR]), { lengthSize: 4, parameterSets: [SPS, SPS2, PPS] }, true, expected([SPS, SPS2, PPS, IDR])],
  ])("%s", (_what, nalus, config, keyframe, out) => {
    expect(webrtcFrame(nalus, config, keyframe)).toEqual(out);
  });

  it("passes an inter frame with 4-byte lengths through untouched", () => {
    const nalus = withLengths(4, [SLICE]);
    const copy = Buffer.from(nalus);
    const out = webrtcFrame(nalus, config4, false);
    expect(out).toBe(nalus);
    expect(out).toEqual(copy);
  });

  it("refuses a cut-off frame it has to convert", () => {
    expect(() => webrtcFrame(withLengths(2, [IDR]).subarray(0, 4), config2, false)).toThrow(AvcError);
    expect(() => webrtcFrame(withLengths(4, [IDR]).subarray(0, 6), config4, true)).toThrow(AvcError);
  });
});
