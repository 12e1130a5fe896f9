import type { z } from "zod";
import { lockKey, type TargetRef, type Tx } from "../../db";
import type { Profile } from "../../shapes";
import { checkUserCap } from "../caps";
import { notFound, unprocessable } from "../errors";
import { hostOf } from "../schemas/common";
import type { multistreamInput } from "../schemas/stream";

type MultistreamInput = z.output<typeof multistreamInput>;

/** A reference's profile must be `source` or one of the stream's renditions. */
export function checkRefProfiles(refs: { profile: string }[], profiles: Profile[]): void {
  const names = profiles.map((p) => p.name);
  refs.forEach((ref, i) => {
    if (ref.profile !== "source" && !names.includes(ref.profile)) {
      const choices = ["source", ...names].map((n) => `"${n}"`).join(", ");
      throw unprocessable(
        `multistream.targets[${i}].profile: "${ref.profile.slice(0, 64)}" is not a profile of this stream; use one of ${choices}`,
      );
    }
  });
}

/**
 * Turns `multistream.targets` into stored references: ids must name the caller's targets
 * (another user's target is a 404, as everywhere), and inline `spec`s create targets. Call it
 * inside the transaction that writes the stream so a refused request creates nothing.
 */
export async function resolveTargetRefs(tx: Tx, userId: string, input: MultistreamInput, profiles: Profile[], maxTargetsPerUser: number): Promise<TargetRef[]> {
  checkRefProfiles(input.targets, profiles);
  const inline = input.targets.filter((t) => t.spec !== undefined).length;
  if (inline > 0) {
    await lockKey(tx.db, `targets/${userId}`);
    checkUserCap(await tx.targets.countOwned(userId), inline, maxTargetsPerUser, "multistream targets", "MAX_TARGETS_PER_USER");
  }
  for (const [i, t] of input.targets.entries()) {
    if (t.id !== undefined && !(await tx.targets.getOwned(userId, t.id))) {
      throw notFound(`multistream.targets[${i}].id: multistream target ${t.id.slice(0, 64)}`);
    }
  }
  const refs: TargetRef[] = [];
  for (const t of input.targets) {
    const id =
      t.id ??
      (await tx.targets.create({ userId, name: t.spec!.name ?? hostOf(t.spec!.url), url: t.spec!.url, disabled: false, tlsVerify: t.spec!.tlsVerify })).id;
    refs.push({ id, profile: t.profile, videoOnly: t.videoOnly });
  }
  return refs;
}
