import { stunAnswer, type StunSender } from "../../../src/webrtc/stun";

// STUN messages built from RFC 8489 §5-§6 and §14 by hand: a 20-byte header (type, length, the
// magic cookie 0x2112A442, a 96-bit transaction id), then attributes padded to 4 bytes.

const MAGIC = 0x2112a442;
const TRANSACTION = Buffer.from("0123456789ab");

function request(type: number, attributes = Buffer.alloc(0), o: { magic?: number; length?: number } = {}): Buffer {
  const h = Buffer.alloc(20);
  h.writeUInt16BE(type, 0);
  h.writeUInt16BE(o.length ?? attributes.length, 2);
  h.writeUInt32BE(o.magic ?? MAGIC, 4);
  TRANSACTION.copy(h, 8);
  return Buffer.concat([h, attributes]);
}

/** REQUESTED-TRANSPORT (UDP), which every Allocate carries. */
const REQUESTED_TRANSPORT = Buffer.from([0x00, 0x19, 0x00, 0x04, 17, 0, 0, 0]);

const v4: StunSender = { address: "192.0.2.7", family: "IPv4", port: 54321 };
const v6: StunSender = { address: "2001:db8::1:2", family: "IPv6", port: 40000 };
const mapped: StunSender = { address: "::ffff:198.51.100.9", family: "IPv6", port: 1234 };

/** Reads XOR-MAPPED-ADDRESS back (the inverse of what the server writes). */
function mappedAddress(answer: Buffer): { family: number; port: number; address: string } {
  expect(answer.readUInt16BE(20)).toBe(0x0020);
  const family = answer[25]!;
  const port = answer.readUInt16BE(26) ^ (MAGIC >>> 16);
  const mask = Buffer.concat([Buffer.from([0x21, 0x12, 0xa4, 0x42]), TRANSACTION]);
  const bytes = [...answer.subarray(28, 28 + (family === 1 ? 4 : 16))].map((b, i) => b ^ mask[i]!);
  const address = family === 1 ? bytes.join(".") : Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16)).join(":");
  return { family, port, address };
}

describe("stunAnswer", () => {
  it.each<[string, StunSender, { family: number; port: number; address: string }]>([
    ["an IPv4 sender", v4, { family: 1, port: 54321, address: "192.0.2.7" }],
    ["an IPv6 sender", v6, { family: 2, port: 40000, address: "2001:db8:0:0:0:0:1:2" }],
    ["an IPv4 sender on a dual-stack socket", mapped, { family: 1, port: 1234, address: "198.51.100.9" }],
  ])("answers a Binding request from %s with its address", (_what, from, expected) => {
    const answer = stunAnswer(request(0x0001), from)!;
    expect(answer.readUInt16BE(0)).toBe(0x0101); // Binding success
    expect(answer.readUInt32BE(4)).toBe(MAGIC);
    expect(answer.subarray(8, 20)).toEqual(TRANSACTION);
    expect(answer.readUInt16BE(2)).toBe(answer.length - 20);
    expect(mappedAddress(answer)).toEqual(expected);
  });

  it.each<[string, number, number]>([
    ["Allocate", 0x0003, 0x0113],
    ["Refresh", 0x0004, 0x0114],
    ["CreatePermission", 0x0008, 0x0118],
    ["ChannelBind", 0x0009, 0x0119],
  ])("refuses TURN's %s at once with 401, a realm and a nonce", (_what, type, errorType) => {
    const answer = stunAnswer(request(type, REQUESTED_TRANSPORT), v4)!;
    expect(answer.readUInt16BE(0)).toBe(errorType);
    expect(answer.subarray(8, 20)).toEqual(TRANSACTION);
    expect(answer.readUInt16BE(2)).toBe(answer.length - 20);
    expect(answer.readUInt16BE(20)).toBe(0x0009); // ERROR-CODE
    expect(answer[26]! * 100 + answer[27]!).toBe(401);
    const types: number[] = [];
    for (let at = 20; at < answer.length; at += 4 + Math.ceil(answer.readUInt16BE(at + 2) / 4) * 4) types.push(answer.readUInt16BE(at));
    expect(types).toEqual([0x0009, 0x0014, 0x0015]); // ERROR-CODE, REALM, NONCE
    expect(answer.length % 4).toBe(0);
    // Not a reflector worth using: at most twice a minimal request.
    expect(answer.length).toBeLessThanOrEqual(2 * 28);
  });

  it.each<[string, Buffer]>([
    ["a Binding success (a response, not a request)", request(0x0101)],
    ["a Binding indication", request(0x0011)],
    ["another magic cookie (classic STUN, RFC 3489)", request(0x0001, Buffer.alloc(0), { magic: 0x12345678 })],
    ["a length past the end", request(0x0001, Buffer.alloc(0), { length: 8 })],
    ["a length that is not whole words", request(0x0001, Buffer.alloc(2), { length: 2 })],
    ["too short for a header", Buffer.alloc(12)],
    ["RTP (its first bits are 10)", Buffer.concat([Buffer.from([0x80, 0x60]), Buffer.alloc(18)])],
    ["a method that is neither Binding nor TURN's", request(0x0002)],
  ])("gives no answer to %s", (_what, msg) => {
    expect(stunAnswer(msg, v4)).toBeUndefined();
  });

  it("gives no answer to a sender claiming port 0 (a spoofed datagram; the answer could not be sent)", () => {
    expect(stunAnswer(request(0x0001), { ...v4, port: 0 })).toBeUndefined();
    expect(stunAnswer(request(0x0003, REQUESTED_TRANSPORT), { ...v6, port: 0 })).toBeUndefined();
  });
});
