import { box, fourcc, fullBox, i16, i32, u16, u24, u32, u64, u8, zeros } from "../../../src/mp4/boxes";

// The byte writers under every box: sizes, types, version and flags, big-endian integers.

const hex = (b: Buffer) => b.toString("hex");

describe("box and fullBox", () => {
  it.each([
    ["an empty box: size 8 and the type", box("free"), "0000000866726565"],
    ["a payload after the header, its parts concatenated", box("mdat", Buffer.from([1, 2]), Buffer.from([3])), "0000000b6d646174010203"],
    ["a full box: version, then 24 bits of flags", fullBox("tfhd", 0, 0x020000, u32(1)), "0000001074666864" + "00020000" + "00000001"],
    ["version 1 and flags 1 (url : the media is in this file)", fullBox("url ", 0, 1), "0000000c75726c2000000001"],
    ["a box of boxes", box("dinf", box("free")), "0000001064696e660000000866726565"],
  ])("%s", (_, bytes, expected) => {
    expect(hex(bytes)).toBe(expected);
  });

  it("refuses a type that is not four characters", () => {
    expect(() => box("abc")).toThrow(RangeError);
    expect(() => fourcc("hvcC1")).toThrow(RangeError);
  });
});

describe("integer writers", () => {
  it.each([
    ["u8", u8(0xfe), "fe"],
    ["u16", u16(0x1234), "1234"],
    ["i16, negative", i16(-256), "ff00"],
    ["u24", u24(0x0f0001), "0f0001"],
    ["u32", u32(0xdeadbeef), "deadbeef"],
    ["i32, negative", i32(-1024), "fffffc00"],
    ["u64, past 32 bits", u64(2 ** 32 + 5), "0000000100000005"],
    ["u64, the largest safe integer", u64(Number.MAX_SAFE_INTEGER), "001fffffffffffff"],
    ["zeros", zeros(3), "000000"],
  ])("%s", (_, bytes, expected) => {
    expect(hex(bytes)).toBe(expected);
  });

  it("refuses values that do not fit", () => {
    expect(() => u64(-1)).toThrow(RangeError);
    expect(() => u64(2 ** 53)).toThrow(RangeError);
    // Node's own range errors, from outside jest's realm: matched by their message.
    expect(() => u8(256)).toThrow(/out of range/);
    expect(() => u32(-1)).toThrow(/out of range/);
  });
});
