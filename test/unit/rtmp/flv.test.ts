import { encodeFlvTag, FlvError, flvHeader, FlvReader, FlvTagType, type FlvTag } from "../../../src/rtmp/flv";

const tags: FlvTag[] = [
  { type: FlvTagType.script, timestamp: 0, data: Buffer.from("020a6f6e4d65746144617461", "hex") },
  { type: FlvTagType.video, timestamp: 0, data: Buffer.from([0x17, 0, 0, 0, 0, 1, 2]) },
  { type: FlvTagType.audio, timestamp: 21, data: Buffer.from([0xaf, 1, 9]) },
  { type: FlvTagType.video, timestamp: 0x12345678, data: Buffer.alloc(70_000, 3) }, // the extension byte carries the top 8 bits
  { type: FlvTagType.audio, timestamp: 0x12345679, data: Buffer.alloc(0) },
];
const stream = Buffer.concat([flvHeader({ audio: true, video: true }), ...tags.map(encodeFlvTag)]);

describe("FlvReader", () => {
  it.each([1, 5, 11, 4096, 65536, stream.length])("reads every tag back from slices of %d bytes", (size) => {
    const r = new FlvReader();
    const out: FlvTag[] = [];
    for (let at = 0; at < stream.length; at += size) out.push(...r.push(stream.subarray(at, at + size)));
    expect(out).toEqual(tags);
    expect(r.header).toEqual({ audio: true, video: true });
  });

  it("encodes a tag as E.4.1 lays it out: type, size, timestamp with its extension, stream id 0, body, PreviousTagSize", () => {
    expect(encodeFlvTag({ type: 9, timestamp: 0x01020304, data: Buffer.from([0xaa]) }).toString("hex")).toBe("0900000102030401000000aa0000000c");
  });

  it("skips a longer header and keeps the flags", () => {
    const header = Buffer.from("464c560101000000 0d 00000000 00000000".replace(/ /g, ""), "hex");
    const r = new FlvReader();
    expect(r.push(Buffer.concat([header, encodeFlvTag(tags[1]!)]))).toEqual([tags[1]]);
    expect(r.header).toEqual({ audio: false, video: true });
  });

  it.each([
    ["not FLV", Buffer.from("GIF89a\0\0\0\0\0\0\0"), /does not start with the FLV signature/],
    ["a header size below 9", Buffer.from("464c56010500000008", "hex"), /header size of 8/],
    ["a PreviousTagSize that does not match (bytes lost)", Buffer.concat([flvHeader({ audio: true, video: false }), encodeFlvTag(tags[2]!).subarray(0, -1), Buffer.from([0])]), /PreviousTagSize of 0/],
  ])("refuses %s", (_what, bytes, message) => {
    expect(() => new FlvReader().push(bytes)).toThrow(FlvError);
    expect(() => new FlvReader().push(bytes)).toThrow(message);
  });
});
