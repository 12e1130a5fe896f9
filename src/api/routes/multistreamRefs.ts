import type { z } from "zod";
import { lockKey, type TargetRef, type Tx } from "../../db";
import type { Profile } from "../../shapes";
import { checkUserCap } from "../caps";
import type { ApiDeps } from "../deps";
import { checkDestinations } from "../destinations";
import { notFound, unprocessable } from "../errors";
import { hostOf } from "../schemas/common";
import type { multistreamInput, targetRefInput } from "../schemas/stream";

type MultistreamInput = z.output<typeof multistreamInput>;
type TargetRefInput = z.output<typeof targetRefInput>;

/**
 * How errors name a reference's field: `multistream.targets[i].profile` in a stream body (the
 * default), plain `profile` where the request body is the one reference itself.
 */
export type RefField = (i: number, field: string) => string;
const inStreamBody: RefField = (i, field) => `multistream.targets[${i}].${field}`;

/** A reference's profile must be `source` or one of the stream's renditions. */
export function checkRefProfiles(refs: { profile: string }[], profiles: Profile[], at: RefField = inStreamBody): void {
  const names = profiles.map((p) => p.name);
  refs.forEach((ref, i) => {
    if (ref.profile !== "source" && !names.includes(ref.profile)) {
      const choices = ["source", ...names].map((n) => `"${n}"`).join(", ");
      throw unprocessable(`${at(i, "profile")}: "${ref.profile.slice(0, 64)}" is not a profile of this stream; use one of ${choices}`);
    }
  });
}

/** MAX_TARGETS_PER_STREAM (issue 8: abuse limits): each reference is another ffmpeg output. */
export function targetCapProblem(count: number, maxTargetsPerStream: number): string | undefined {
  if (count <= maxTargetsPerStream) return undefined;
  return `multistream.targets: at most ${maxTargetsPerStream} multistream targets per stream (MAX_TARGETS_PER_STREAM), got ${count}`;
}

/** Inline target specs create targets: their urls pass the outbound policy like any target's. */
export function checkInlineTargets(deps: Pick<ApiDeps, "outbound">, refs: { spec?: { url: string } }[], at: RefField = inStreamBody): Promise<void> {
  const hosts = refs.flatMap((t, i) => (t.spec ? [{ field: at(i, "spec.url"), host: hostOf(t.spec.url) }] : []));
  return checkDestinations(deps, hosts);
}

/**
 * Turns `multistream.targets` into stored references: ids must name the caller's targets
 * (another user's target is a 404, as everywhere), and inline `spec`s create targets. Call it
 * inside the transaction that writes the stream so a refused request creates nothing.
 */
export async function resolveTargetRefs(
  tx: Tx,
  userId: string,
  input: MultistreamInput | { targets: TargetRefInput[] },
  profiles: Profile[],
  maxTargetsPerUser: number,
  at: RefField = inStreamBody,
): Promise<TargetRef[]> {
  checkRefProfiles(input.targets, profiles, at);
  const inline = input.targets.filter((t) => t.spec !== undefined).length;
  if (inline > 0) {
    await lockKey(tx.db, `targets/${userId}`);
    checkUserCap(await tx.targets.countOwned(userId), inline, maxTargetsPerUser, "multistream targets", "MAX_TARGETS_PER_USER");
  }
  for (const [i, t] of input.targets.entries()) {
    if (t.id !== undefined && !(await tx.targets.getOwned(userId, t.id))) {
      throw notFound(`${at(i, "id")}: multistream target ${t.id.slice(0, 64)}`);
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
