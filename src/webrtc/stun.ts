// The STUN (RFC 8489) a player's ICE agent asks of the WHEP URL's host: onair answers Binding
// requests with the address they came from, and TURN's requests (RFC 8656) with a refusal at once.
// Livepeer's player always lists `stun:<host>` and `turn:<host>` of the URL it plays; with nobody
// answering on that port, a browser's ICE gathering never completes and that player waits out its
// own 5 s before it makes its offer. Pure: a message in, the answer out.
//
// The refusal is 401 with a realm and a nonce, to every TURN request: browsers drop an error
// without MESSAGE-INTEGRITY unless it is one of the few a client needs before it authenticates
// (Chromium: "Discarding unauthenticated error response with code 403"), and a 401 to the request
// that carried credentials ends the allocation ("Failed to authenticate … after challenge"). onair
// relays nothing, so no credential is good: no key to derive, none to keep.

export const STUN_PORT = 3478;
const MAGIC = 0x2112a442;
const HEADER = 20;
const BINDING = 0x001;
/** TURN's methods (RFC 8656 §17): Allocate, Refresh, Send, Data, CreatePermission, ChannelBind. */
const TURN_METHODS = new Set([0x003, 0x004, 0x006, 0x007, 0x008, 0x009]);
const XOR_MAPPED_ADDRESS = 0x0020;
const ERROR_CODE = 0x0009;
const REALM = 0x0014;
const NONCE = 0x0015;
const REQUEST = 0;
const SUCCESS = 2;
const ERROR = 3;
/** Short: an answer much longer than its request would make the port useful for reflecting floods. */
const REALM_NAME = Buffer.from("onair");
const NONCE_VALUE = Buffer.from("none");

export interface StunSender {
  address: string;
  family: "IPv4" | "IPv6";
  port: number;
}

/** Method and class from a message type: the class bits are spread among the method's (RFC 8489 §5). */
function splitType(type: number): { method: number; cls: number } {
  return { method: (type & 0x000f) | ((type >> 1) & 0x0070) | ((type >> 2) & 0x0f80), cls: ((type >> 4) & 1) | ((type >> 7) & 2) };
}

function joinType(method: number, cls: number): number {
  return (method & 0x000f) | ((method & 0x0070) << 1) | ((method & 0x0f80) << 2) | ((cls & 1) << 4) | ((cls & 2) << 7);
}

/**
 * The answer to one datagram, or undefined when there is none to give: not a STUN request (wrong
 * first bits, magic cookie, length), or a method other than Binding and TURN's.
 */
export function stunAnswer(msg: Buffer, from: StunSender): Buffer | undefined {
  // Port 0 is no one's: a datagram can claim it (spoofed), an answer cannot go there.
  if (from.port <= 0 || from.port > 65_535) return undefined;
  if (msg.length < HEADER || (msg[0]! & 0xc0) !== 0 || msg.readUInt32BE(4) !== MAGIC) return undefined;
  const length = msg.readUInt16BE(2);
  if (length % 4 !== 0 || HEADER + length !== msg.length) return undefined;
  const { method, cls } = splitType(msg.readUInt16BE(0));
  if (cls !== REQUEST) return undefined;
  const transaction = msg.subarray(8, HEADER);
  if (method === BINDING) return message(joinType(BINDING, SUCCESS), transaction, [attribute(XOR_MAPPED_ADDRESS, xorAddress(from, transaction))]);
  if (TURN_METHODS.has(method)) return message(joinType(method, ERROR), transaction, [attribute(ERROR_CODE, errorCode(401)), attribute(REALM, REALM_NAME), attribute(NONCE, NONCE_VALUE)]);
  return undefined;
}

function message(type: number, transaction: Buffer, attributes: Buffer[]): Buffer {
  const body = Buffer.concat(attributes);
  const header = Buffer.alloc(HEADER);
  header.writeUInt16BE(type, 0);
  header.writeUInt16BE(body.length, 2);
  header.writeUInt32BE(MAGIC, 4);
  transaction.copy(header, 8);
  return Buffer.concat([header, body]);
}

/** Type, length, value, padded to 4 bytes (the padding is not counted in the length). */
function attribute(type: number, value: Buffer): Buffer {
  const out = Buffer.alloc(4 + Math.ceil(value.length / 4) * 4);
  out.writeUInt16BE(type, 0);
  out.writeUInt16BE(value.length, 2);
  value.copy(out, 4);
  return out;
}

/** The sender's address and port, XORed with the magic cookie (and the transaction id for IPv6). */
function xorAddress(from: StunSender, transaction: Buffer): Buffer {
  const v4 = from.family === "IPv4" || /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(from.address);
  const bytes = v4 ? ipv4Bytes(from.address.replace(/^::ffff:/i, "")) : ipv6Bytes(from.address);
  const mask = Buffer.alloc(16);
  mask.writeUInt32BE(MAGIC, 0);
  transaction.copy(mask, 4);
  const out = Buffer.alloc(4 + bytes.length);
  out[1] = v4 ? 0x01 : 0x02;
  out.writeUInt16BE(from.port ^ (MAGIC >>> 16), 2);
  for (let i = 0; i < bytes.length; i++) out[4 + i] = bytes[i]! ^ mask[i]!;
  return out;
}

function ipv4Bytes(address: string): Buffer {
  return Buffer.from(address.split(".").map(Number));
}

function ipv6Bytes(address: string): Buffer {
  const [head = "", tail] = address.split("%")[0]!.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16) || 0, i * 2));
  return out;
}

/** ERROR-CODE: class (hundreds) and number; no reason phrase (the code says it, and bytes count). */
function errorCode(code: number): Buffer {
  const out = Buffer.alloc(4);
  out[2] = Math.floor(code / 100);
  out[3] = code % 100;
  return out;
}
