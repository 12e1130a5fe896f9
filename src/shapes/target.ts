import { z } from "zod";

// The multistream target object. Spec 2.4: a target's url is write-only; only the create
// response carries it.

export const targetObject = z
  .object({
    id: z.string(),
    userId: z.string(),
    name: z.string(),
    disabled: z.boolean(),
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
  createdAt: number;
}

/** Spec 2.4: a target's url is write-only; only the create response carries it. */
export function presentTarget(t: StoredTarget): TargetJson {
  return { id: t.id, userId: t.userId, name: t.name, disabled: t.disabled, createdAt: t.createdAt };
}
