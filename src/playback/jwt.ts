import { decodeJwt, decodeProtectedHeader, errors, importSPKI, jwtVerify } from "jose";

// A viewer's JWT (Livepeer's access-control JWT): ES256, signed by one of the stream owner's
// signing keys, `sub` the playback id, `pub` that key's public half (as the API handed it out:
// base64 of the PEM), `exp` required. Checked with jose; nothing hand-written.

/** Clocks of the signer and this server may disagree by this much (seconds). */
export const CLOCK_SKEW_SECONDS = 5;

/** The owner's signing key a JWT names, as the database has it. */
export interface KnownKey {
  id: string;
  publicKey: string;
  disabled: boolean;
}

/** The owner's key with this public half (PEM), if any. */
export type KeyLookup = (userId: string, pubClaim: string) => Promise<KnownKey | undefined>;

export type JwtVerdict = { ok: true; keyId: string; expires: number } | { ok: false; reason: string };

export async function verifyPlaybackJwt(token: string, playbackId: string, ownerId: string, findKey: KeyLookup, now: Date = new Date()): Promise<JwtVerdict> {
  let pub: unknown;
  let sub: unknown;
  try {
    if (decodeProtectedHeader(token).alg !== "ES256") return { ok: false, reason: "the JWT must be signed with ES256" };
    ({ pub, sub } = decodeJwt(token));
  } catch {
    return { ok: false, reason: "the JWT is malformed" };
  }
  if (sub !== playbackId) return { ok: false, reason: "the JWT is for another playback id (sub)" };
  if (typeof pub !== "string" || pub.length > 4096) return { ok: false, reason: "the JWT has no `pub` claim naming its signing key" };
  const key = await findKey(ownerId, pub);
  if (!key) return { ok: false, reason: "the JWT's signing key is not one of the stream owner's" };
  if (key.disabled) return { ok: false, reason: "the JWT's signing key is disabled" };
  try {
    const verified = await jwtVerify(token, await importSPKI(key.publicKey, "ES256"), {
      algorithms: ["ES256"],
      subject: playbackId,
      requiredClaims: ["exp"],
      clockTolerance: CLOCK_SKEW_SECONDS,
      currentDate: now,
    });
    return { ok: true, keyId: key.id, expires: verified.payload.exp! };
  } catch (err) {
    if (err instanceof errors.JWTExpired) return { ok: false, reason: "the JWT has expired" };
    if (err instanceof errors.JWTClaimValidationFailed) return { ok: false, reason: `the JWT's ${err.claim} claim is not valid` };
    return { ok: false, reason: "the JWT's signature does not verify" };
  }
}
