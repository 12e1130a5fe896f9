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

/** The headers of the Standard Webhooks specification (standardwebhooks.com), sent beside `Livepeer-Signature`. */
export interface StandardWebhooksHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

const WHSEC_PREFIX = "whsec_";
// Canonical, padded base64: what the Standard Webhooks libraries decode without throwing.
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The HMAC key of a shared secret. A `whsec_<base64>` secret is the Standard Webhooks
 * convention: the key is the decoded remainder, so `new Webhook(secret)` verifies as it is.
 * Any other secret (Livepeer's are plain strings) is keyed by its UTF-8 bytes, which a receiver
 * gives as `new Webhook(secret, { format: "raw" })`; so is a `whsec_` secret whose remainder is
 * not canonical base64 (those libraries would refuse it rather than pick a key).
 */
export function standardWebhooksKey(secret: string): Buffer {
  const rest = secret.startsWith(WHSEC_PREFIX) ? secret.slice(WHSEC_PREFIX.length) : undefined;
  if (rest && CANONICAL_BASE64.test(rest)) return Buffer.from(rest, "base64");
  return Buffer.from(secret, "utf8");
}

/**
 * `webhook-id` is the event id (the same on every retry and resend, for deduplication),
 * `webhook-timestamp` this attempt's time in whole seconds, `webhook-signature`
 * `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<raw body>">`.
 */
export function standardWebhooksHeaders(eventId: string, rawBody: string, secret: string, timestampMs: number): StandardWebhooksHeaders {
  const seconds = String(Math.floor(timestampMs / 1000));
  const mac = crypto.createHmac("sha256", standardWebhooksKey(secret)).update(`${eventId}.${seconds}.${rawBody}`, "utf8").digest("base64");
  return { "webhook-id": eventId, "webhook-timestamp": seconds, "webhook-signature": `v1,${mac}` };
}
