import { opusDops, vpcRecord } from "../../../src/mp4/configs";

// The two configurations that change on their way into a sample entry: the VP codec record with
// or without vpcC's version and flags, and an OpusHead (little-endian) becoming dOps (big-endian).

const hex = (b: Buffer) => b.toString("hex");

describe("vpcRecord", () => {
  // libvpx-vp9's record as ffmpeg writes it into vpcC: profile 0, level 2.0, 8 bits, 4:2:0.
  const record = Buffer.from("00148202020200" + "00", "hex");

  it.each([
    ["the record alone, as the Enhanced RTMP spec lays it out", record],
    ["the record behind vpcC's version 1 and flags, as ffmpeg's FLV muxer sends it", Buffer.concat([Buffer.from("01000000", "hex"), record])],
  ])("takes %s", (_, config) => {
    expect(hex(vpcRecord(config))).toBe(hex(record));
  });

  it("keeps the codec initialization data its length field counts", () => {
    const withData = Buffer.from("0014820202020003aabbcc", "hex");
    expect(hex(vpcRecord(withData))).toBe(hex(withData));
    expect(hex(vpcRecord(Buffer.concat([Buffer.from("01000000", "hex"), withData])))).toBe(hex(withData));
  });

  it("refuses a record whose length field disagrees with its size", () => {
    expect(() => vpcRecord(Buffer.from("00148202020200", "hex"))).toThrow(RangeError);
    expect(() => vpcRecord(Buffer.from("0014820202020005aa", "hex"))).toThrow(RangeError);
  });
});

describe("opusDops", () => {
  const opusHead = (channels: number, family: number, table: number[] = []) => {
    const head = Buffer.alloc(19);
    head.write("OpusHead", 0, "latin1");
    head.writeUInt8(1, 8);
    head.writeUInt8(channels, 9);
    head.writeUInt16LE(312, 10); // pre-skip
    head.writeUInt32LE(44100, 12); // the source's rate
    head.writeInt16LE(-256, 16); // -1 dB
    head.writeUInt8(family, 18);
    return Buffer.concat([head, Buffer.from(table)]);
  };

  it("turns a stereo OpusHead into dOps: version 0, fields big-endian, no table for family 0", () => {
    expect(hex(opusDops(opusHead(2, 0)))).toBe("00" + "02" + "0138" + "0000ac44" + "ff00" + "00");
  });

  it("keeps the channel mapping table of family 1 (stream count, coupled count, one byte per channel)", () => {
    const table = [4, 2, 0, 4, 1, 2, 3, 5];
    expect(hex(opusDops(opusHead(6, 1, table)))).toBe("00" + "06" + "0138" + "0000ac44" + "ff00" + "01" + "0402000401020305");
  });

  it("takes a dOps payload as it is", () => {
    const dOps = Buffer.from("0002013800000bb80000" + "00", "hex");
    expect(opusDops(dOps)).toBe(dOps);
  });

  it("refuses a short OpusHead, a family without its table, and anything else", () => {
    expect(() => opusDops(opusHead(2, 0).subarray(0, 18))).toThrow(RangeError);
    expect(() => opusDops(opusHead(6, 1, [4, 2, 0]))).toThrow(/channel mapping table/);
    expect(() => opusDops(Buffer.from("OggS", "latin1"))).toThrow(RangeError);
  });
});
