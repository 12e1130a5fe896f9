import { presentTarget, targetCreatedObject, targetObject } from "../../shapes";
import { DEFAULT_LIMITS } from "../../config";
import { lockKey } from "../../db";
import { checkUserCap } from "../caps";
import type { ApiDeps } from "../deps";
import { checkDestinations } from "../destinations";
import { badRequest, notFound } from "../errors";
import { decodeCursor } from "../pagination";
import { route, type Route } from "../route";
import { errorBody, hostOf, listQuery } from "../schemas/common";
import { targetCreateBody, targetPatchBody } from "../schemas/target";
import { pageResult } from "./listing";

const TAG = "Multistream targets";
const notFoundResponse = { description: "No such target of the caller", schema: errorBody };

export function targetRoutes(deps: ApiDeps): Route[] {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const { store } = deps;
  const owned = async (userId: string, id: string) => {
    const t = await store.targets.getOwned(userId, id);
    if (!t) throw notFound(`multistream target ${id.slice(0, 64)}`);
    return t;
  };

  return [
    route({
      method: "post",
      path: "/multistream/target",
      tag: TAG,
      summary: "Create a multistream target (it receives nothing until a stream references it)",
      body: targetCreateBody,
      responses: { 201: { description: "The new target, with its url (the only time it is returned)", schema: targetCreatedObject }, 422: { description: "Invalid body, or a destination the outbound policy refuses", schema: errorBody } },
      handle: async ({ userId, body }) => {
        await checkDestinations(deps, [{ field: "url", host: hostOf(body.url) }]);
        const t = await store.transaction(async (tx) => {
          await lockKey(tx.db, `targets/${userId}`);
          checkUserCap(await tx.targets.countOwned(userId), 1, limits.maxTargetsPerUser, "multistream targets", "MAX_TARGETS_PER_USER");
          return tx.targets.create({ userId, url: body.url, name: body.name ?? hostOf(body.url), disabled: body.disabled ?? false, tlsVerify: body.tlsVerify });
        });
        return { status: 201, body: { ...presentTarget(t), url: t.url } };
      },
    }),

    route({
      method: "get",
      path: "/multistream/target",
      tag: TAG,
      summary: "List the caller's targets, newest first (urls are never returned)",
      query: listQuery,
      responses: { 200: { description: "One page of targets", schema: targetObject, list: true } },
      handle: ({ userId, query, req }) =>
        pageResult(req, store.targets.list(userId, { limit: query.limit, beforeSeq: decodeCursor(query.cursor) }), presentTarget),
    }),

    route({
      method: "get",
      path: "/multistream/target/:id",
      tag: TAG,
      summary: "Get a target",
      responses: { 200: { description: "The target", schema: targetObject }, 404: notFoundResponse },
      handle: async ({ userId, params }) => ({ status: 200, body: presentTarget(await owned(userId, params.id!)) }),
    }),

    route({
      method: "patch",
      path: "/multistream/target/:id",
      tag: TAG,
      summary: "Update a target; absent fields stay unchanged, a new url must be given whole",
      body: targetPatchBody,
      responses: { 204: { description: "Updated" }, 404: notFoundResponse, 422: { description: "Invalid body, or a destination the outbound policy refuses", schema: errorBody } },
      handle: async ({ userId, params, body }) => {
        const t = await owned(userId, params.id!);
        if (body.url !== undefined) await checkDestinations(deps, [{ field: "url", host: hostOf(body.url) }]);
        await store.transaction(async (tx) => {
          await tx.targets.update(t.id, { name: body.name, url: body.url, disabled: body.disabled, tlsVerify: body.tlsVerify });
          // A live stream pushing to this target starts, stops or redirects its push.
          for (const stream of await tx.streamTargets.streamsReferencing(t.id)) await deps.live.announce(tx.db, { streamId: stream.id, change: "changed" });
        });
        return { status: 204 };
      },
    }),

    route({
      method: "delete",
      path: "/multistream/target/:id",
      tag: TAG,
      summary: "Delete a target no stream references any more",
      responses: { 204: { description: "Deleted" }, 400: { description: "Streams still reference the target", schema: errorBody }, 404: notFoundResponse },
      handle: async ({ userId, params }) => {
        const t = await owned(userId, params.id!);
        // docs/api.md#spec-43-multistream-targets rule 5: references go first, so no live stream loses a destination by surprise.
        const refs = await store.streamTargets.streamsReferencing(t.id);
        if (refs.length > 0) {
          const names = refs.map((s) => `"${s.name}" (${s.id})`).join(", ");
          throw badRequest(`multistream target ${t.id} is still referenced by stream${refs.length > 1 ? "s" : ""} ${names}; remove it from their multistream.targets first`);
        }
        await store.targets.delete(t.id);
        return { status: 204 };
      },
    }),
  ];
}
