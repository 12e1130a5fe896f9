import { basicHeader, ChunkReader, ChunkWriter, pingResponse, RtmpChunkError, RtmpType, type RtmpMessage } from "../../../src/rtmp/chunks";

const msg = (o: Partial<RtmpMessage> & { payload: Buffer }): RtmpMessage => ({ csid: 4, type: RtmpType.audio, streamId: 1, timestamp: 0, ...o });
const bytes = (n: number, fill = 1) => Buffer.alloc(n, fill);

describe("basicHeader (spec 5.3.1.1): 1, 2 or 3 bytes by chunk stream id", () => {
  it.each([
    [0, 2, "02"],
    [3, 63, "ff"],
    [1, 64, "4000"],
    [0, 319, "00ff"],
    [2, 320, "810001"],
    [0, 65599, "01ffff"],
  ])("fmt %d, csid %d → %s", (fmt, csid, expected) => {
    expect(basicHeader(fmt, csid).toString("hex")).toBe(expected);
    // And read back.
    const [m] = new ChunkReader().push(Buffer.concat([basicHeader(0, csid), Buffer.from("00000000000108010000000000", "hex").subarray(0, 11), Buffer.from([7])]));
    expect(m?.csid).toBe(csid);
  });

  it.each([1, 0, 65600])("refuses csid %d", (csid) => {
    expect(() => basicHeader(0, csid)).toThrow(RtmpChunkError);
  });
});

describe("ChunkWriter: the shortest header that says what changed", () => {
  it.each<[string, RtmpMessage[], string[]]>([
    ["the first message on a chunk stream: type 0, little-endian stream id", [msg({ timestamp: 10, payload: bytes(2) })], ["04 00000a 000002 08 01000000 0101"]],
    [
      "a new length: type 1; the same delta again: type 3; only a new delta: type 2",
      [msg({ timestamp: 0, payload: bytes(2) }), msg({ timestamp: 20, payload: bytes(3) }), msg({ timestamp: 40, payload: bytes(3) }), msg({ timestamp: 70, payload: bytes(3) })],
      ["04 000000 000002 08 01000000 0101", "44 000014 000003 08 010101", "c4 010101", "84 00001e 010101"],
    ],
    ["a timestamp going back: type 0 again", [msg({ timestamp: 100, payload: bytes(1) }), msg({ timestamp: 50, payload: bytes(1) })], ["04 000064 000001 08 01000000 01", "04 000032 000001 08 01000000 01"]],
    ["another message stream: type 0 again", [msg({ payload: bytes(1) }), msg({ streamId: 2, payload: bytes(1) })], ["04 000000 000001 08 01000000 01", "04 000000 000001 08 02000000 01"]],
    ["a payload over the chunk size (128): type 3 continuations", [msg({ payload: bytes(300, 2) })], [`04 000000 00012c 08 01000000 ${"02".repeat(128)} c4 ${"02".repeat(128)} c4 ${"02".repeat(44)}`]],
    [
      "a timestamp of 0xffffff or more: the extended field, repeated on each continuation",
      [msg({ timestamp: 0x01000000, payload: bytes(130, 3) })],
      [`04 ffffff 000082 08 01000000 01000000 ${"03".repeat(128)} c4 01000000 0303`],
    ],
    [
      "a delta of 0xffffff or more on a type 1 header: extended too",
      [msg({ timestamp: 0, payload: bytes(1) }), msg({ timestamp: 0x01000005, payload: bytes(2) })],
      ["04 000000 000001 08 01000000 01", "44 ffffff 000002 08 01000005 0101"],
    ],
  ])("%s", (_what, messages, expected) => {
    const w = new ChunkWriter();
    expect(messages.map((m) => w.write(m).toString("hex"))).toEqual(expected.map((e) => e.replace(/ /g, "")));
  });

  it("setChunkSize: the message is cut with the old size, what follows with the new one", () => {
    const w = new ChunkWriter();
    expect(w.setChunkSize(4096).toString("hex")).toBe("020000000000040100000000" + "00001000");
    expect(w.chunkSize).toBe(4096);
    expect(w.write(msg({ payload: bytes(4097) })).length).toBe(12 + 4097 + 1);
    expect(() => w.setChunkSize(0)).toThrow(RtmpChunkError);
  });

  it("refuses timestamps past 32 bits and payloads past 24", () => {
    expect(() => new ChunkWriter().write(msg({ timestamp: 2 ** 32, payload: bytes(1) }))).toThrow(/32-bit/);
    expect(() => new ChunkWriter().write(msg({ payload: Buffer.alloc(0x1000000) }))).toThrow(/24-bit length/);
  });
});

describe("ChunkReader: what the writer wrote, in any slicing", () => {
  const sequence: RtmpMessage[] = [
    msg({ csid: 3, type: RtmpType.amf0Command, streamId: 0, payload: bytes(200, 5) }),
    msg({ timestamp: 0, payload: bytes(300, 6) }),
    msg({ csid: 6, type: RtmpType.video, timestamp: 0, payload: bytes(10, 7) }),
    msg({ timestamp: 21, payload: bytes(300, 8) }),
    msg({ timestamp: 42, payload: bytes(300, 9) }),
    msg({ timestamp: 63, payload: bytes(300, 10) }),
    msg({ csid: 6, type: RtmpType.video, timestamp: 0xfffffe, payload: bytes(10, 11) }),
    msg({ csid: 6, type: RtmpType.video, timestamp: 0x01000010, payload: bytes(500, 12) }),
    msg({ csid: 6, type: RtmpType.video, timestamp: 0x01000020, payload: bytes(500, 13) }),
    msg({ csid: 6, type: RtmpType.video, timestamp: 0x01000030, payload: bytes(500, 14) }),
    msg({ csid: 400, type: RtmpType.amf0Data, timestamp: 5, payload: bytes(1, 15) }),
  ];

  it.each([1, 3, 128, 1000, 100_000])("slices of %d bytes", (size) => {
    const w = new ChunkWriter();
    const wire = Buffer.concat(sequence.map((m) => w.write(m)));
    const r = new ChunkReader();
    const out: RtmpMessage[] = [];
    for (let at = 0; at < wire.length; at += size) out.push(...r.push(wire.subarray(at, at + size)));
    expect(out).toEqual(sequence);
  });

  it("a Set Chunk Size applies from the very next chunk, both ways", () => {
    const w = new ChunkWriter();
    const wire = Buffer.concat([w.setChunkSize(4096), w.write(msg({ payload: bytes(5000) })), w.setChunkSize(64), w.write(msg({ timestamp: 1, payload: bytes(200) }))]);
    const r = new ChunkReader();
    const out = r.push(wire);
    expect(out.map((m) => [m.type, m.payload.length])).toEqual([
      [RtmpType.setChunkSize, 4],
      [RtmpType.audio, 5000],
      [RtmpType.setChunkSize, 4],
      [RtmpType.audio, 200],
    ]);
    expect(r.chunkSize).toBe(64);
  });

  it("an Abort drops the partial message of its chunk stream", () => {
    const w = new ChunkWriter();
    const whole = w.write(msg({ payload: bytes(200) }));
    const abortPayload = Buffer.alloc(4);
    abortPayload.writeUInt32BE(4);
    const abort = new ChunkWriter().write({ csid: 2, type: RtmpType.abort, streamId: 0, timestamp: 0, payload: abortPayload });
    const after = new ChunkWriter().write(msg({ timestamp: 7, payload: bytes(3) }));
    const out = new ChunkReader().push(Buffer.concat([whole.subarray(0, 12 + 128), abort, after]));
    expect(out.map((m) => [m.type, m.timestamp, m.payload.length])).toEqual([
      [RtmpType.abort, 0, 4],
      [RtmpType.audio, 7, 3],
    ]);
  });

  it("a type 3 chunk that starts a message after an extended type 0 adds the extended value (spec 5.3.1.2.4)", () => {
    // fmt 0, ts 0x01000000 (extended); then fmt 3 new message repeating the extended field.
    const wire = Buffer.from("04ffffff0000010801000000" + "01000000" + "aa" + "c4" + "01000000" + "bb", "hex");
    expect(new ChunkReader().push(wire).map((m) => m.timestamp)).toEqual([0x01000000, 0x02000000]);
  });

  it.each([
    ["a type 1 chunk on a chunk stream with no type 0 before", "44000000000001080101", /no type 0 chunk/],
    ["a new header in the middle of a message", "04000000000100080100000041" + "00".repeat(127) + "4400000000000108", /in the middle of a message/],
    ["a Set Chunk Size of 0", "02000000000004010000000000000000", /out of range/],
    ["a Set Chunk Size too short", "020000000000020100000000" + "0001", /without its 4 bytes/],
  ])("refuses %s", (_what, hex, message) => {
    expect(() => new ChunkReader().push(Buffer.from(hex, "hex"))).toThrow(message);
  });
});

describe("pingResponse (spec 7.1.7)", () => {
  it("echoes a Ping Request's timestamp; nothing for other events", () => {
    const request = msg({ csid: 2, type: RtmpType.userControl, streamId: 0, payload: Buffer.from("000600000102", "hex") });
    expect(pingResponse(request)?.payload.toString("hex")).toBe("000700000102");
    expect(pingResponse({ ...request, payload: Buffer.from("000000000001", "hex") })).toBeUndefined();
    expect(pingResponse({ ...request, type: RtmpType.audio })).toBeUndefined();
  });
});

describe("ChunkReader limits: what a peer can make it hold", () => {
  it("refuses a message longer than maxMessageSize as soon as its header arrives", () => {
    const header = new ChunkWriter().write(msg({ payload: bytes(1000) })).subarray(0, 12);
    expect(() => new ChunkReader({ maxMessageSize: 999 }).push(header)).toThrow(/a message of 1000 bytes \(at most 999 taken\)/);
    expect(new ChunkReader({ maxMessageSize: 1000 }).push(header)).toEqual([]);
  });

  it("refuses messages on many chunk streams that together hold more than maxPartialBytes; a completed message frees its share", () => {
    const r = new ChunkReader({ maxMessageSize: 1000, maxPartialBytes: 300 });
    const w = new ChunkWriter();
    // First chunks (128 bytes each) of 1000-byte messages on chunk streams 10 and 11: 256 held.
    r.push(w.write(msg({ csid: 10, payload: bytes(1000) })).subarray(0, 12 + 128));
    r.push(w.write(msg({ csid: 11, payload: bytes(1000) })).subarray(0, 12 + 128));
    // A whole small message still goes through (its 40 bytes are freed at once)...
    expect(r.push(w.write(msg({ csid: 12, payload: bytes(40) })))).toHaveLength(1);
    // ...but a third message under way would make 384.
    expect(() => r.push(w.write(msg({ csid: 13, payload: bytes(1000) })).subarray(0, 12 + 128))).toThrow(/hold more than 300 bytes/);
  });

  it("refuses a chunk stream beyond maxChunkStreams; the ones it knows go on", () => {
    const r = new ChunkReader({ maxChunkStreams: 2 });
    const w = new ChunkWriter();
    expect(r.push(Buffer.concat([w.write(msg({ csid: 3, payload: bytes(4) })), w.write(msg({ csid: 4, payload: bytes(4) }))]))).toHaveLength(2);
    expect(r.push(w.write(msg({ csid: 3, payload: bytes(4) })))).toHaveLength(1);
    expect(() => r.push(w.write(msg({ csid: 5, payload: bytes(4) })))).toThrow(/beyond the 2 taken/);
  });
});
