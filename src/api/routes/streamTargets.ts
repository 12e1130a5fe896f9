import { DEFAULT_LIMITS } from "../../config";
import { lockKey, type StreamRecord } from "../../db";
import type { ApiDeps } from "../deps";
import { badRequest, notFound, unprocessable } from "../errors";
import { route, type Route } from "../route";
import { errorBody } from "../schemas/common";
import { targetRefInput } from "../schemas/stream";
import { checkInlineTargets, resolveTargetRefs, targetCapProblem, type RefField } from "./multistreamRefs";

// One multistream reference at a time (the SDK's stream.addMultistreamTarget and
// removeMultistreamTarget): each is the PATCH /stream/{id} of `multistream.targets` with that
// reference appended or taken out, with the same checks and the same effect on a live session.

const TAG = "Streams";
const targetAddBody = targetRefInput.meta({
  id: "TargetAddPayload",
  description: "One multistream reference: `id` of an existing target, or `spec` to create one; `profile` is `source` or one of the stream's profiles.",
});
// The request body is the reference itself: its fields are named as sent.
const asSent: RefField = (_i, field) => field;
const notFoundResponse = { description: "No such stream of the caller, or no such target of it", schema: errorBody };

export function streamTargetRoutes(deps: ApiDeps): Route[] {
  const { store } = deps;
  const limits = deps.limits ?? DEFAULT_LIMITS;

  /** The caller's parent stream (a child stream object is read-only history, docs/api.md#spec-21-stream-object); anything else is a 404. */
  const ownedParent = async (userId: string, id: string): Promise<StreamRecord> => {
    const s = await store.streams.getOwned(userId, id);
    if (!s) throw notFound(`stream ${id.slice(0, 64)}`);
    if (s.parentId !== null) throw badRequest("historic child stream objects are read-only; change the parent stream's multistream targets");
    return s;
  };

  return [
    route({
      method: "post",
      path: "/stream/:id/create-multistream-target",
      tag: TAG,
      summary: "Add a multistream target reference to the stream (as PATCH of `multistream.targets` with it appended); a live session starts pushing to it",
      body: targetAddBody,
      responses: {
        204: { description: "Added" },
        400: { description: "A child stream object, or MAX_TARGETS_PER_USER reached", schema: errorBody },
        404: notFoundResponse,
        422: { description: "Invalid body, unknown profile, a refused destination or MAX_TARGETS_PER_STREAM reached", schema: errorBody },
      },
      handle: async ({ userId, body, params }) => {
        const s = await ownedParent(userId, params.id!);
        await checkInlineTargets(deps, [body], asSent);
        await store.transaction(async (tx) => {
          // Two adds at once both count the references the other has not written yet.
          await lockKey(tx.db, `stream-targets/${s.id}`);
          const current = await tx.streamTargets.listForStream(s.id);
          const capProblem = targetCapProblem(current.length + 1, limits.maxTargetsPerStream);
          if (capProblem) throw unprocessable(capProblem);
          const added = await resolveTargetRefs(tx, userId, { targets: [body] }, s.profiles, limits.maxTargetsPerUser, asSent);
          await tx.streamTargets.replaceForStream(s.id, [...current, ...added]);
          // The node running its session starts the new push.
          await deps.live.announce(tx.db, { streamId: s.id, change: "changed" });
        });
        deps.log.info({ streamId: s.id, userId }, "multistream target reference added");
        return { status: 204 };
      },
    }),

    route({
      method: "delete",
      path: "/stream/:id/multistream/:targetId",
      tag: TAG,
      summary: "Remove the stream's references to a multistream target (the target itself stays); a live session stops pushing to it",
      responses: { 204: { description: "Removed" }, 400: { description: "A child stream object", schema: errorBody }, 404: notFoundResponse },
      handle: async ({ userId, params }) => {
        const s = await ownedParent(userId, params.id!);
        const targetId = params.targetId!;
        await store.transaction(async (tx) => {
          await lockKey(tx.db, `stream-targets/${s.id}`);
          const current = await tx.streamTargets.listForStream(s.id);
          const kept = current.filter((ref) => ref.id !== targetId);
          // Only the caller's targets are ever referenced by the caller's stream: another user's is not found here either.
          if (kept.length === current.length) throw notFound(`multistream target ${targetId.slice(0, 64)} of stream ${s.id}`);
          await tx.streamTargets.replaceForStream(s.id, kept);
          // The node running its session stops that push.
          await deps.live.announce(tx.db, { streamId: s.id, change: "changed" });
        });
        deps.log.info({ streamId: s.id, userId, targetId }, "multistream target reference removed");
        return { status: 204 };
      },
    }),
  ];
}
