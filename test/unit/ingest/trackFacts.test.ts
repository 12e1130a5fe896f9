import { sourceTrack } from "../../../src/ingest/trackFacts";
import { encodeVideoTag } from "../../../src/rtmp";

// x264's record of a 640x360 picture (ffmpeg, testsrc2, ultrafast): its SPS says the size.
const AVCC_640x360 = Buffer.from("0142c01effe100196742c01eda0280bfe5c044000003000400000300f03c58ba8001000468ce0fc8", "hex");

describe("sourceTrack", () => {
  it.each([
    ["no configuration yet", undefined, { id: 3 }],
    ["a legacy AVC sequence header", encodeVideoTag({ kind: "config", codec: "avc1", record: AVCC_640x360, legacy: true }), { id: 3, codec: "avc1", width: 640, height: 360 }],
    ["an enhanced one", encodeVideoTag({ kind: "config", codec: "avc1", record: AVCC_640x360 }), { id: 3, codec: "avc1", width: 640, height: 360 }],
    ["a record too short to hold a size: the codec alone", encodeVideoTag({ kind: "config", codec: "avc1", record: Buffer.from([1, 0x42, 0xc0, 0x1e]) }), { id: 3, codec: "avc1" }],
    ["bytes that are no video tag", Buffer.from([0xff]), { id: 3 }],
    ["a coded frame, not a configuration", encodeVideoTag({ kind: "frame", codec: "avc1", frameType: 1, keyframe: true, compositionMs: 0, data: Buffer.from([0, 0, 0, 1, 0x65]) }), { id: 3 }],
  ] as const)("%s", (_what, header, expected) => {
    expect(sourceTrack(3, header)).toEqual(expected);
  });
});
