import { childBoxes, parseFragment, type InitTrack } from "../../../src/hls";
import { fragment, NON_SYNC_SAMPLE_FLAGS, SYNC_SAMPLE_FLAGS, type Mp4Sample } from "../../../src/mp4/fragment";

// moof + mdat byte by byte on small cases: mfhd, tfhd, tfdt, trun flags and sample flags, the
// data offsets into the mdat; and what the packager's parser reads from them.

const hex = (b: Buffer) => b.toString("hex");
const sample = (data: string, keyframe: boolean, compositionOffset = 0, duration = 3000): Mp4Sample => ({
  duration,
  size: Buffer.from(data).length,
  compositionOffset,
  keyframe,
  data: Buffer.from(data),
});

const payload = (buf: Buffer, type: string) => childBoxes(buf).find((b) => b.type === type)!.payload;
const trafs = (moof: Buffer) => childBoxes(moof).filter((b) => b.type === "traf").map((b) => b.payload);

describe("fragment", () => {
  const one = fragment(7, [{ trackId: 1, baseDecodeTime: 2 ** 32 + 1, samples: [sample("key", true, 6000), sample("p", false, -3000)] }]);
  const top = childBoxes(one);
  const moof = top[0]!.payload;
  const traf = trafs(moof)[0]!;

  it("is a moof then an mdat holding the samples", () => {
    expect(top.map((b) => b.type)).toEqual(["moof", "mdat"]);
    expect(top[1]!.payload.toString()).toBe("keyp");
  });

  it("mfhd: version 0, the sequence number", () => {
    expect(hex(payload(moof, "mfhd"))).toBe("00000000" + "00000007");
  });

  it("tfhd: default-base-is-moof and the track id, no defaults", () => {
    expect(hex(payload(traf, "tfhd"))).toBe("00020000" + "00000001");
  });

  it("tfdt: version 1, a 64-bit decode time", () => {
    expect(hex(payload(traf, "tfdt"))).toBe("01000000" + "0000000100000001");
  });

  it("trun: version 1 with data offset, duration, size, flags and signed composition offsets", () => {
    const trun = payload(traf, "trun");
    const dataOffset = 8 + moof.length + 8; // moof's header and payload, then mdat's header
    expect(hex(trun)).toBe(
      "01000f01" +
        "00000002" +
        dataOffset.toString(16).padStart(8, "0") +
        ["00000bb8", "00000003", "02000000", "00001770"].join("") +
        ["00000bb8", "00000001", "01010000", "fffff448"].join(""),
    );
    expect(one.subarray(dataOffset, dataOffset + 4).toString()).toBe("keyp");
  });

  it("sample flags: a sync sample depends on nothing, any other depends and is not sync", () => {
    expect(SYNC_SAMPLE_FLAGS).toBe(0x0200_0000);
    expect(NON_SYNC_SAMPLE_FLAGS).toBe(0x0101_0000);
  });

  it("puts each track's samples in the mdat in the order of the trafs, each trun pointing at its own", () => {
    const two = fragment(1, [
      { trackId: 2, baseDecodeTime: 0, samples: [sample("vv", true), sample("VV", false)] },
      { trackId: 1, baseDecodeTime: 10, samples: [sample("aaa", true, 0, 1024)] },
    ]);
    const [moof2, mdat2] = childBoxes(two);
    expect(mdat2!.payload.toString()).toBe("vvVVaaa");
    const offsets = trafs(moof2!.payload).map((t) => payload(t, "trun").readInt32BE(8));
    expect(offsets.map((o, i) => two.subarray(o, o + [4, 3][i]!).toString())).toEqual(["vvVV", "aaa"]);
  });

  it("reads back through the packager's parser: sequence, decode times, durations, sizes, sync starts", () => {
    const tracks: InitTrack[] = [1, 2].map((id) => ({ id, handler: "vide", timescale: 90000, codec: "avc1", defaults: { duration: 0, size: 0, flags: 0 } }));
    const parsed = parseFragment(
      fragment(3, [
        { trackId: 1, baseDecodeTime: 90000, samples: [sample("a", true), sample("bb", false)] },
        { trackId: 2, baseDecodeTime: 5, samples: [sample("ccc", false)] },
      ]),
      tracks,
    );
    expect(parsed).toEqual({
      sequence: 3,
      tracks: [
        { id: 1, baseDecodeTime: 90000, sampleCount: 2, duration: 6000, size: 3, startsWithSync: true },
        { id: 2, baseDecodeTime: 5, sampleCount: 1, duration: 3000, size: 3, startsWithSync: false },
      ],
    });
  });

  it("refuses an empty fragment, an empty part, a track twice, and a size that is not the data's", () => {
    expect(() => fragment(1, [])).toThrow(RangeError);
    expect(() => fragment(1, [{ trackId: 1, baseDecodeTime: 0, samples: [] }])).toThrow(RangeError);
    const part = { trackId: 1, baseDecodeTime: 0, samples: [sample("x", true)] };
    expect(() => fragment(1, [part, part])).toThrow(/one part per track/);
    expect(() => fragment(1, [{ trackId: 1, baseDecodeTime: 0, samples: [{ ...sample("xy", true), size: 3 }] }])).toThrow(/size 3 holding 2 bytes/);
  });
});
