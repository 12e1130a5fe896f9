import { aacObjectType, childBoxes, parseInit } from "../../../src/hls";
import { initSegment } from "../../../src/mp4/init";
import type { Mp4Track } from "../../../src/mp4/track";

// The init segment box by box: ftyp brands, the moov's tracks with empty sample tables, each
// codec's sample entry and configuration box, mvex/trex; and what the packager's parser reads.

const hex = (b: Buffer) => b.toString("hex");
const payload = (buf: Buffer, type: string) => {
  const found = childBoxes(buf).find((b) => b.type === type);
  if (!found) throw new Error(`no ${type}`);
  return found.payload;
};
const types = (buf: Buffer) => childBoxes(buf).map((b) => b.type);
const walk = (buf: Buffer, ...path: string[]) => path.reduce(payload, buf);

const avcC = Buffer.from("0164001fffe1000467640000", "hex");
const asc = Buffer.from("1190", "hex");
const h264: Mp4Track = { id: 1, kind: "video", codec: "avc1", config: avcC, width: 1280, height: 720, timescale: 90000 };
const aac: Mp4Track = { id: 2, kind: "audio", codec: "mp4a", config: asc, channels: 2, sampleRate: 48000, timescale: 48000 };

/** The sample entry of the only track of an init with `track`: its type and payload. */
function entryOf(track: Mp4Track) {
  const stsd = walk(initSegment([track]), "moov", "trak", "mdia", "minf", "stbl", "stsd");
  expect(stsd.readUInt32BE(4)).toBe(1);
  return childBoxes(stsd.subarray(8))[0]!;
}
const configOf = (track: Mp4Track) => {
  const entry = entryOf(track);
  return { entry: entry.type, boxes: childBoxes(entry.payload.subarray(track.kind === "video" ? 78 : 28)) };
};

describe("initSegment", () => {
  const init = initSegment([h264, aac]);
  const moov = payload(init, "moov");

  it("starts with ftyp: major isom, compatible isom, iso6, mp41 (and av01 with an AV1 track)", () => {
    expect(hex(payload(init, "ftyp"))).toBe(hex(Buffer.from("isom\0\0\x02\0isomiso6mp41", "latin1")));
    const av1: Mp4Track = { ...h264, codec: "av01", config: Buffer.from("81000c", "hex") };
    expect(payload(initSegment([av1]), "ftyp").toString("latin1", 8)).toBe("isomiso6mp41av01");
  });

  it("has mvhd, a trak per track in order, and mvex with a trex per track, all defaults zero", () => {
    expect(types(moov)).toEqual(["mvhd", "trak", "trak", "mvex"]);
    const mvhd = payload(moov, "mvhd");
    expect(mvhd.readUInt32BE(12)).toBe(1000);
    expect(mvhd.readUInt32BE(mvhd.length - 4)).toBe(3); // next_track_ID
    const trex = childBoxes(payload(moov, "mvex")).map((b) => hex(b.payload));
    expect(trex).toEqual(["00000000" + "00000001" + "00000001" + "00000000".repeat(3), "00000000" + "00000002" + "00000001" + "00000000".repeat(3)]);
  });

  it("gives each trak tkhd and mdia(mdhd, hdlr, minf(media header, dinf, stbl with empty tables))", () => {
    const traks = childBoxes(moov).filter((b) => b.type === "trak").map((b) => b.payload);
    expect(traks.map(types)).toEqual([
      ["tkhd", "mdia"],
      ["tkhd", "mdia"],
    ]);
    const [video, sound] = traks.map((t) => payload(t, "mdia"));
    expect(types(video!)).toEqual(["mdhd", "hdlr", "minf"]);
    expect(types(payload(video!, "minf"))).toEqual(["vmhd", "dinf", "stbl"]);
    expect(types(payload(sound!, "minf"))).toEqual(["smhd", "dinf", "stbl"]);
    const stbl = walk(video!, "minf", "stbl");
    expect(types(stbl)).toEqual(["stsd", "stts", "stsc", "stsz", "stco"]);
    expect(["stts", "stsc", "stco"].map((t) => hex(payload(stbl, t)))).toEqual(["0000000000000000", "0000000000000000", "0000000000000000"]);
    expect(hex(payload(stbl, "stsz"))).toBe("000000000000000000000000");
    expect(hex(walk(video!, "minf", "dinf", "dref"))).toBe("00000000" + "00000001" + "0000000c75726c2000000001");
  });

  it("states the timescale and language in mdhd, the size in tkhd (16.16), the handler in hdlr", () => {
    const [video, sound] = childBoxes(moov)
      .filter((b) => b.type === "trak")
      .map((b) => b.payload);
    const mdhd = walk(video!, "mdia", "mdhd");
    expect(mdhd.readUInt32BE(12)).toBe(90000);
    expect(mdhd.readUInt16BE(20)).toBe(0x55c4); // "und"
    const tkhd = payload(video!, "tkhd");
    expect(tkhd.readUInt32BE(0)).toBe(0x000003);
    expect([tkhd.readUInt32BE(76) / 65536, tkhd.readUInt32BE(80) / 65536]).toEqual([1280, 720]);
    expect(payload(sound!, "tkhd").readUInt16BE(36)).toBe(0x0100);
    expect(walk(sound!, "mdia", "hdlr").toString("latin1", 8, 12)).toBe("soun");
  });

  it("reads back through the packager's parser", () => {
    expect(parseInit(init)).toEqual([
      { id: 1, handler: "vide", timescale: 90000, codec: "avc1.64001f", width: 1280, height: 720, defaults: { duration: 0, size: 0, flags: 0 } },
      { id: 2, handler: "soun", timescale: 48000, codec: "mp4a.40.2", channels: 2, sampleRate: 48000, defaults: { duration: 0, size: 0, flags: 0 } },
    ]);
  });

  it.each([
    ["avc1", "avcC"],
    ["hvc1", "hvcC"],
    ["av01", "av1C"],
  ] as const)("%s carries the record in %s as the publisher sent it", (codec, box) => {
    const config = Buffer.from("01020304050607", "hex");
    expect(configOf({ ...h264, codec, config })).toEqual({ entry: codec, boxes: [{ type: box, payload: config }] });
  });

  it("vp09 wraps the record in vpcC's version 1 and flags, whether or not the publisher sent them", () => {
    const record = Buffer.from("0014820202020000", "hex");
    for (const config of [record, Buffer.concat([Buffer.from("01000000", "hex"), record])]) {
      const { entry, boxes } = configOf({ ...h264, codec: "vp09", config });
      expect(entry).toBe("vp09");
      expect(boxes.map((b) => [b.type, hex(b.payload)])).toEqual([["vpcC", "01000000" + hex(record)]]);
    }
  });

  it("mp4a carries the AudioSpecificConfig in esds, after MPEG-4 audio's descriptors", () => {
    const { boxes } = configOf(aac);
    const esds = boxes[0]!;
    expect(esds.type).toBe("esds");
    expect(hex(esds.payload)).toBe("00000000" + "0319" + "0002" + "00" + "0411" + "40" + "15" + "000000" + "00000000" + "00000000" + "0502" + "1190" + "060102");
    expect(aacObjectType(esds.payload.subarray(4))).toBe(2);
  });

  it("Opus: dOps from the OpusHead, 48 kHz in the entry whatever the source's rate", () => {
    const head = Buffer.concat([Buffer.from("OpusHead", "latin1"), Buffer.from("0102" + "3801" + "44ac0000" + "0000" + "00", "hex")]);
    const opus: Mp4Track = { id: 1, kind: "audio", codec: "Opus", config: head, channels: 2, sampleRate: 44100, timescale: 48000 };
    const entry = entryOf(opus);
    expect(entry.type).toBe("Opus");
    expect(entry.payload.readUInt16BE(16)).toBe(2);
    expect(entry.payload.readUInt32BE(24)).toBe(48000 * 65536);
    expect(childBoxes(entry.payload.subarray(28)).map((b) => [b.type, hex(b.payload)])).toEqual([["dOps", "00" + "02" + "0138" + "0000ac44" + "0000" + "00"]]);
  });

  it("lays the visual sample entry out as ISO/IEC 14496-12 12.1.3 says", () => {
    const p = entryOf(h264).payload;
    expect(p.readUInt16BE(6)).toBe(1); // data_reference_index
    expect([p.readUInt16BE(24), p.readUInt16BE(26)]).toEqual([1280, 720]);
    expect([p.readUInt32BE(28), p.readUInt32BE(32)]).toEqual([0x480000, 0x480000]);
    expect(p.readUInt16BE(40)).toBe(1); // frame_count
    expect([p.readUInt16BE(74), p.readInt16BE(76)]).toEqual([0x18, -1]);
  });

  it("refuses no tracks, repeated or non-positive ids, and a timescale that is not a positive integer", () => {
    expect(() => initSegment([])).toThrow(RangeError);
    expect(() => initSegment([h264, { ...aac, id: 1 }])).toThrow(/distinct/);
    expect(() => initSegment([{ ...h264, id: 0 }])).toThrow(/distinct/);
    expect(() => initSegment([{ ...h264, timescale: 0 }])).toThrow(/timescale/);
  });
});
