import { z } from "zod";
import type { SigningKeyRecord } from "../../db";
import { expected } from "../../shapes";

// Playback signing keys, as Livepeer Studio shapes them: publicKey (and, once, privateKey) are
// the base64 of the PEM text, which Livepeer's clients (@livepeer/core's signAccessJwt) take
// as they come and put in a JWT's `pub` claim.

const keyName = z.string(expected("a string")).trim().min(1, "must not be empty").max(500);

export const signingKeyCreateBody = z
  .object({ name: keyName.optional().describe('defaults to "Signing Key"') })
  .meta({ id: "SigningKeyInput" });

export const signingKeyPatchBody = z
  .object({
    name: keyName.optional(),
    disabled: z.boolean(expected("a boolean")).optional().describe("a disabled key opens no playback until enabled again"),
  })
  .meta({ id: "SigningKeyPatchPayload" });

export const signingKeyObject = z
  .object({
    id: z.string(),
    name: z.string(),
    userId: z.string(),
    createdAt: z.number(),
    lastSeen: z.number().optional().describe("when a JWT signed with the key last opened a playback"),
    publicKey: z.string().describe("base64 of the SPKI PEM of the P-256 public key; a JWT's `pub` claim"),
    disabled: z.boolean(),
  })
  .meta({ id: "SigningKey", description: "The private key is never returned after create." });

export const signingKeyCreatedObject = signingKeyObject
  .extend({ privateKey: z.string().describe("base64 of the PKCS#8 PEM of the private key: returned this once, never stored") })
  .meta({ id: "SigningKeyCreated", description: "The create response: the only one carrying privateKey." });

export type SigningKeyJson = z.infer<typeof signingKeyObject>;

/** The API's view of a stored key (pure): never a private key, which is not stored anyway. */
export function presentSigningKey(k: SigningKeyRecord): SigningKeyJson {
  return {
    id: k.id,
    name: k.name,
    userId: k.userId,
    createdAt: k.createdAt,
    ...(k.lastSeen !== null ? { lastSeen: k.lastSeen } : {}),
    publicKey: Buffer.from(k.publicKey, "utf8").toString("base64"),
    disabled: k.disabled,
  };
}
