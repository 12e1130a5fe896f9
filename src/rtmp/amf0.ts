// AMF0 (Adobe's "Action Message Format 0" specification, section 2): the values of RTMP
// command and data messages, encoded and decoded as pure functions. Only the types RTMP peers
// send: numbers, booleans, strings (short and long), objects, null, undefined, ECMA arrays
// (onMetaData), strict arrays and dates. Anything else is refused with the byte it was found at.

export type Amf0Value = number | boolean | string | null | undefined | Date | Amf0Value[] | Amf0EcmaArray | Amf0Object;

export interface Amf0Object {
  [key: string]: Amf0Value;
}

/** An associative ("ECMA") array, marker 0x08, as onMetaData carries its fields: encoded as such, decoded back as this class. */
export class Amf0EcmaArray {
  constructor(readonly entries: Amf0Object) {}
}

export const AMF0_MARKER = {
  number: 0x00,
  boolean: 0x01,
  string: 0x02,
  object: 0x03,
  null: 0x05,
  undefined: 0x06,
  ecmaArray: 0x08,
  objectEnd: 0x09,
  strictArray: 0x0a,
  date: 0x0b,
  longString: 0x0c,
} as const;

export class Amf0Error extends Error {
  override readonly name = "Amf0Error";
}

/** Nested objects deeper than this are refused: a peer's data must not exhaust the stack. */
const MAX_DEPTH = 64;

function shortString(text: string): Buffer {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length > 0xffff) throw new Amf0Error(`a property name of ${bytes.length} bytes does not fit AMF0's 16-bit length`);
  const out = Buffer.alloc(2 + bytes.length);
  out.writeUInt16BE(bytes.length, 0);
  bytes.copy(out, 2);
  return out;
}

function properties(entries: Amf0Object, parts: Buffer[], depth: number): void {
  for (const [key, value] of Object.entries(entries)) {
    parts.push(shortString(key));
    encodeValue(value, parts, depth + 1);
  }
  parts.push(Buffer.from([0x00, 0x00, AMF0_MARKER.objectEnd]));
}

function encodeValue(value: Amf0Value, parts: Buffer[], depth: number): void {
  if (depth > MAX_DEPTH) throw new Amf0Error(`values nested deeper than ${MAX_DEPTH}`);
  if (value === null) return void parts.push(Buffer.from([AMF0_MARKER.null]));
  if (value === undefined) return void parts.push(Buffer.from([AMF0_MARKER.undefined]));
  if (typeof value === "number") {
    const out = Buffer.alloc(9);
    out[0] = AMF0_MARKER.number;
    out.writeDoubleBE(value, 1);
    return void parts.push(out);
  }
  if (typeof value === "boolean") return void parts.push(Buffer.from([AMF0_MARKER.boolean, value ? 1 : 0]));
  if (typeof value === "string") {
    const bytes = Buffer.from(value, "utf8");
    if (bytes.length <= 0xffff) return void parts.push(Buffer.from([AMF0_MARKER.string]), shortString(value));
    const header = Buffer.alloc(5);
    header[0] = AMF0_MARKER.longString;
    header.writeUInt32BE(bytes.length, 1);
    return void parts.push(header, bytes);
  }
  if (value instanceof Date) {
    // The last two bytes are a time zone, which spec 2.13 says must be 0.
    const out = Buffer.alloc(11);
    out[0] = AMF0_MARKER.date;
    out.writeDoubleBE(value.getTime(), 1);
    return void parts.push(out);
  }
  if (Array.isArray(value)) {
    const header = Buffer.alloc(5);
    header[0] = AMF0_MARKER.strictArray;
    header.writeUInt32BE(value.length, 1);
    parts.push(header);
    for (const v of value) encodeValue(v, parts, depth + 1);
    return;
  }
  if (value instanceof Amf0EcmaArray) {
    const header = Buffer.alloc(5);
    header[0] = AMF0_MARKER.ecmaArray;
    header.writeUInt32BE(Object.keys(value.entries).length, 1);
    parts.push(header);
    return properties(value.entries, parts, depth);
  }
  parts.push(Buffer.from([AMF0_MARKER.object]));
  properties(value, parts, depth);
}

/** The values one after the other, as a command or data message carries them. */
export function encodeAmf0(values: readonly Amf0Value[]): Buffer {
  const parts: Buffer[] = [];
  for (const v of values) encodeValue(v, parts, 0);
  return Buffer.concat(parts);
}

class Amf0Reader {
  at = 0;
  constructor(private readonly buf: Buffer) {}

  private need(n: number): void {
    if (this.at + n > this.buf.length) throw new Amf0Error(`truncated value at byte ${this.at}`);
  }

  private u8(): number {
    this.need(1);
    return this.buf[this.at++]!;
  }

  private u16(): number {
    this.need(2);
    this.at += 2;
    return this.buf.readUInt16BE(this.at - 2);
  }

  private u32(): number {
    this.need(4);
    this.at += 4;
    return this.buf.readUInt32BE(this.at - 4);
  }

  private double(): number {
    this.need(8);
    this.at += 8;
    return this.buf.readDoubleBE(this.at - 8);
  }

  private utf8(length: number): string {
    this.need(length);
    this.at += length;
    return this.buf.toString("utf8", this.at - length, this.at);
  }

  /** Key/value pairs up to the empty key and the object-end marker. */
  private properties(depth: number): Amf0Object {
    const out: Amf0Object = {};
    for (;;) {
      const key = this.utf8(this.u16());
      if (key === "") {
        this.need(1);
        if (this.buf[this.at] === AMF0_MARKER.objectEnd) {
          this.at++;
          return out;
        }
      }
      // A peer's "__proto__" key must stay data, never become the object's prototype.
      Object.defineProperty(out, key, { value: this.value(depth + 1), enumerable: true, writable: true, configurable: true });
    }
  }

  value(depth = 0): Amf0Value {
    if (depth > MAX_DEPTH) throw new Amf0Error(`values nested deeper than ${MAX_DEPTH}`);
    const marker = this.u8();
    switch (marker) {
      case AMF0_MARKER.number:
        return this.double();
      case AMF0_MARKER.boolean:
        return this.u8() !== 0;
      case AMF0_MARKER.string:
        return this.utf8(this.u16());
      case AMF0_MARKER.longString:
        return this.utf8(this.u32());
      case AMF0_MARKER.object:
        return this.properties(depth);
      case AMF0_MARKER.null:
        return null;
      case AMF0_MARKER.undefined:
        return undefined;
      case AMF0_MARKER.ecmaArray:
        this.u32(); // a hint only: the entries end with the object-end marker (spec 2.10)
        return new Amf0EcmaArray(this.properties(depth));
      case AMF0_MARKER.strictArray: {
        const count = this.u32();
        // Each value takes at least a byte: a count beyond what is left is a lie.
        if (count > this.buf.length - this.at) throw new Amf0Error(`a strict array of ${count} values in ${this.buf.length - this.at} bytes`);
        const out: Amf0Value[] = [];
        for (let i = 0; i < count; i++) out.push(this.value(depth + 1));
        return out;
      }
      case AMF0_MARKER.date: {
        const ms = this.double();
        this.u16();
        return new Date(ms);
      }
      default:
        throw new Amf0Error(`unsupported marker 0x${marker.toString(16).padStart(2, "0")} at byte ${this.at - 1}`);
    }
  }
}

/** Every value of a command or data message, in order. Throws Amf0Error on bytes that are not AMF0. */
export function decodeAmf0(buf: Buffer): Amf0Value[] {
  const reader = new Amf0Reader(buf);
  const values: Amf0Value[] = [];
  while (reader.at < buf.length) values.push(reader.value());
  return values;
}

/** An object's (or ECMA array's) string field, or "" (for reading a peer's info objects). */
export function amf0Text(value: Amf0Value | undefined, key: string): string {
  const entries = value instanceof Amf0EcmaArray ? value.entries : isAmf0Object(value) ? value : undefined;
  const v = entries && Object.hasOwn(entries, key) ? entries[key] : undefined;
  return typeof v === "string" ? v : "";
}

export function isAmf0Object(value: Amf0Value | undefined): value is Amf0Object {
  return typeof value === "object" && value !== null && !(value instanceof Date) && !Array.isArray(value) && !(value instanceof Amf0EcmaArray);
}
