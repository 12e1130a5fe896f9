import { importPKCS8, SignJWT } from "jose";

/** A playback JWT as @livepeer/core's signAccessJwt makes it: the signing key exactly as the API returned it. */
export async function signJwt(key: { privateKey?: string; publicKey: string }, playbackId: string, expiresInSeconds: number): Promise<string> {
  const privateKey = await importPKCS8(Buffer.from(key.privateKey!, "base64").toString("utf8"), "ES256");
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ sub: playbackId, pub: key.publicKey, action: "pull", video: "none" })
    .setProtectedHeader({ alg: "ES256", typ: "JWT" })
    .setIssuer("https://app.example.com")
    .setIssuedAt(now)
    .setExpirationTime(now + expiresInSeconds)
    .sign(privateKey);
}
