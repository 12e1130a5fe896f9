import { Amf0EcmaArray, Amf0Error, amf0Text, decodeAmf0, encodeAmf0, type Amf0Value } from "../../../src/rtmp/amf0";

const hex = (values: Amf0Value[]) => encodeAmf0(values).toString("hex");

describe("AMF0 encoding (spec section 2)", () => {
  it.each<[string, Amf0Value, string]>([
    ["a number: marker 0, an IEEE 754 double", 1, "003ff0000000000000"],
    ["zero", 0, "000000000000000000"],
    ["true", true, "0101"],
    ["false", false, "0100"],
    ["a short string: marker 2, 16-bit length, UTF-8", "connect", "020007636f6e6e656374"],
    ["an empty string", "", "020000"],
    ["UTF-8 counted in bytes", "é", "020002c3a9"],
    ["null", null, "05"],
    ["undefined", undefined, "06"],
    ["an object: key/value pairs, then 00 00 09", { a: 1 }, "03000161003ff0000000000000000009"],
    ["an ECMA array: marker 8 and a count", new Amf0EcmaArray({ a: true }), "08000000010001610101000009"],
    ["a strict array: marker 10 and a count", [true, null], "0a00000002010105"],
    ["a date: ms as a double, a zero time zone", new Date(0), "0b00000000000000000000"],
  ])("%s", (_what, value, expected) => {
    expect(hex([value])).toBe(expected);
    // And back.
    expect(decodeAmf0(Buffer.from(expected, "hex"))).toEqual([value]);
  });

  it("a string of more than 65535 bytes goes as a long string (marker 12, 32-bit length)", () => {
    const long = "x".repeat(70_000);
    const bytes = encodeAmf0([long]);
    expect(bytes.subarray(0, 5).toString("hex")).toBe("0c00011170");
    expect(decodeAmf0(bytes)).toEqual([long]);
  });

  it("a command's values one after the other, as RTMP sends them", () => {
    const connect: Amf0Value[] = ["connect", 1, { app: "live2", type: "nonprivate", flashVer: "FMLE/3.0 (compatible; onair)", tcUrl: "rtmp://a.example.com:1935/live2" }];
    expect(decodeAmf0(encodeAmf0(connect))).toEqual(connect);
    const result: Amf0Value[] = ["_result", 4, null, 1];
    expect(decodeAmf0(encodeAmf0(result))).toEqual(result);
  });

  it.each<[string, string, RegExp]>([
    ["a truncated number", "003ff0", /truncated value at byte 1/],
    ["a string longer than its bytes", "0200056162", /truncated/],
    ["an object without its end marker", "030001610101", /truncated/],
    ["an unsupported marker (AMF3 switch)", "11", /unsupported marker 0x11 at byte 0/],
    ["a strict array claiming more values than bytes", "0affffffff05", /strict array of 4294967295 values/],
  ])("refuses %s", (_what, bytes, message) => {
    expect(() => decodeAmf0(Buffer.from(bytes, "hex"))).toThrow(Amf0Error);
    expect(() => decodeAmf0(Buffer.from(bytes, "hex"))).toThrow(message);
  });

  it("a peer's __proto__ key stays data", () => {
    const bytes = Buffer.concat([Buffer.from("030009", "hex"), Buffer.from("__proto__"), Buffer.from("0101000009", "hex")]);
    const [obj] = decodeAmf0(bytes) as [Record<string, unknown>];
    expect(Object.getPrototypeOf(obj)).toBe(Object.prototype);
    expect(Object.keys(obj)).toEqual(["__proto__"]);
  });

  it("refuses values nested past 64 levels, both ways", () => {
    let deep: Amf0Value = 1;
    for (let i = 0; i < 70; i++) deep = [deep];
    expect(() => encodeAmf0([deep])).toThrow(/nested deeper than 64/);
    const bytes = Buffer.concat([...Array.from({ length: 70 }, () => Buffer.from("0a00000001", "hex")), Buffer.from("05", "hex")]);
    expect(() => decodeAmf0(bytes)).toThrow(/nested deeper than 64/);
  });

  it.each<[string, Amf0Value | undefined, string]>([
    ["an object's string field", { code: "NetStream.Publish.Start" }, "NetStream.Publish.Start"],
    ["an ECMA array's", new Amf0EcmaArray({ code: "x" }), "x"],
    ["a field that is not a string", { code: 1 }, ""],
    ["not an object", "code", ""],
    ["nothing", undefined, ""],
  ])("amf0Text: %s", (_what, value, expected) => {
    expect(amf0Text(value, "code")).toBe(expected);
  });
});
