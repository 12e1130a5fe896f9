import { z } from "zod";
import { expected } from "./messages";

// The multistream target object. Spec 2.4: a target's url is write-only; only the create
// response carries it.

// An onair extension: ffmpeg does not verify rtmps certificates unless told to, and onair
// tells it to, against the system's CA store; a target may opt out.
export const targetTlsVerify = z
  .boolean(expected("a boolean"))
  .describe("onair extension: verify an rtmps:// destination's certificate against the system's CA store (default true); false skips the check");

export const targetObject = z
  .object({
    id: z.string(),
    userId: z.string(),
    name: z.string(),
    disabled: z.boolean(),
    tlsVerify: targetTlsVerify,
    createdAt: z.number(),
  })
  .meta({ id: "MultistreamTarget", description: "The url is never returned after create." });

export const targetCreatedObject = targetObject
  .extend({ url: z.string() })
  .meta({ id: "MultistreamTargetCreated", description: "The create response: the only one carrying url." });

export type TargetJson = z.infer<typeof targetObject>;

/** What presentTarget reads of a stored target; its url is not among it. */
export interface StoredTarget {
  id: string;
  userId: string;
  name: string;
  disabled: boolean;
  /** rtmps: verify the destination's certificate (the default); false skips it. */
  tlsVerify: boolean;
  createdAt: number;
}

/** Spec 2.4: a target's url is write-only; only the create response carries it. */
export function presentTarget(t: StoredTarget): TargetJson {
  return { id: t.id, userId: t.userId, name: t.name, disabled: t.disabled, tlsVerify: t.tlsVerify, createdAt: t.createdAt };
}
