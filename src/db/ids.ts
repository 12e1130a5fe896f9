import crypto from "node:crypto";

const BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz";
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Uniformly random characters from an alphabet (rejection sampling: no modulo bias). */
export function randomChars(alphabet: string, length: number): string {
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < length) {
    for (const byte of crypto.randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Object ids: UUIDs, as the Livepeer API uses. */
export function newId(): string {
  return crypto.randomUUID();
}

/** docs/architecture.md#ids-and-keys: 16 random lower-case base36 characters in four dash-separated groups. */
export function newStreamKey(): string {
  const s = randomChars(BASE36, 16);
  return `${s.slice(0, 4)}-${s.slice(4, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}`;
}

/** An SRT passphrase: 24 characters (SRT takes 10 to 79), safe in a URL's query unescaped. */
export function newSrtPassphrase(): string {
  return randomChars(BASE36, 24);
}

/** docs/architecture.md#ids-and-keys: 16 random characters (lower-case base36 keeps them URL- and path-safe). */
export function newPlaybackId(): string {
  return randomChars(BASE36, 16);
}

/** API keys: 32 base62 characters, about 190 bits of entropy; only their hash is stored. */
export function newApiKey(): string {
  return randomChars(BASE62, 32);
}

/** SHA-256, hex: how API keys are stored and how stream keys and playback ids are looked up. */
export function sha256Hex(value: string): string {
  return crypto.createHash("sha256").update(value).digest("hex");
}

export const hashApiKey = sha256Hex;

/**
 * The second half of a lookup by hash: the stored secret equals the one presented, compared
 * in constant time (a hash collision would otherwise pass).
 */
export function secretsEqual(stored: string, presented: string): boolean {
  const a = Buffer.from(sha256Hex(stored), "hex");
  const b = Buffer.from(sha256Hex(presented), "hex");
  return crypto.timingSafeEqual(a, b);
}

let lastStamp = 0;
/**
 * Wall-clock ms that never repeat or go back in this process: what orders a webhook against
 * the events raised around it ("made before the event" is `createdAt <=`), which Date.now()
 * alone cannot within one millisecond.
 */
export function orderedNow(): number {
  lastStamp = Math.max(Date.now(), lastStamp + 1);
  return lastStamp;
}
