import crypto from "node:crypto";

/**
 * The `Livepeer-Signature` header: `t=<ms>,v1=<hex HMAC-SHA256 of the raw body>`. As Livepeer
 * Studio signs, only the body is signed; the body carries the same `timestamp`, so a receiver
 * can reject old replays by it.
 */
export function signatureHeader(rawBody: string, secret: string, timestampMs: number): string {
  return `t=${timestampMs},v1=${crypto.createHmac("sha256", secret).update(rawBody).digest("hex")}`;
}

/** What a receiver does: recompute and compare in constant time. */
export function verifySignature(rawBody: string, header: string, secret: string): boolean {
  const fields = new Map(
    header.split(",").map((kv) => {
      const i = kv.indexOf("=");
      return [kv.slice(0, i).trim(), kv.slice(i + 1).trim()] as const;
    }),
  );
  const given = Buffer.from(fields.get("v1") ?? "", "hex");
  const expected = crypto.createHmac("sha256", secret).update(rawBody).digest();
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}
