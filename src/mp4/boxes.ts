// The ISO base media file format's boxes as bytes (ISO/IEC 14496-12 4.2): a 32-bit size, a
// four-character type, then the payload; a full box puts a version byte and 24 bits of flags
// before its payload. Every integer in a box is big-endian. The writers here are the only place
// the rest of src/mp4 turns numbers into bytes, so each box reads as a list of its fields.

/** The largest size a 32-bit box header states; fragments of a live stream stay far below it. */
const MAX_32 = 0xffff_ffff;

/** A box: `type` (four Latin-1 characters) around the concatenated payload. */
export function box(type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  if (8 + body.length > MAX_32) throw new RangeError(`a ${type} box of ${8 + body.length} bytes: larger than a 32-bit size`);
  return Buffer.concat([u32(8 + body.length), fourcc(type), body]);
}

/** A full box: version and flags come first in its payload. */
export function fullBox(type: string, version: number, flags: number, ...payload: Buffer[]): Buffer {
  return box(type, u8(version), u24(flags), ...payload);
}

export function u8(n: number): Buffer {
  const b = Buffer.alloc(1);
  b.writeUInt8(n, 0);
  return b;
}

export function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n, 0);
  return b;
}

export function i16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n, 0);
  return b;
}

export function u24(n: number): Buffer {
  const b = Buffer.alloc(3);
  b.writeUIntBE(n, 0, 3);
  return b;
}

export function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n, 0);
  return b;
}

export function i32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n, 0);
  return b;
}

/** A 64-bit unsigned integer; decode times outgrow 32 bits after 13 hours at 90 kHz. */
export function u64(n: number): Buffer {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${n} is not an unsigned 64-bit integer this writer can hold exactly`);
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n), 0);
  return b;
}

/** Four characters, as box and brand types and handler types are written. */
export function fourcc(s: string): Buffer {
  if (s.length !== 4) throw new RangeError(`a four-character code, not ${JSON.stringify(s)}`);
  return Buffer.from(s, "latin1");
}

export function zeros(n: number): Buffer {
  return Buffer.alloc(n);
}
