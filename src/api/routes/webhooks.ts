import { lockKey } from "../../db";
import type { z } from "zod";
import type { WebhookFields } from "../../db";
import { EVENT_NAMES } from "../../shapes";
import { DEFAULT_LIMITS } from "../../config";
import { checkUserCap } from "../caps";
import type { ApiDeps } from "../deps";
import { checkDestinations } from "../destinations";
import { notFound } from "../errors";
import { decodeCursor } from "../pagination";
import { presentWebhook } from "../present";
import { route, type Route } from "../route";
import { errorBody, hostOf, listQuery } from "../schemas/common";
import { webhookBody, webhookObject } from "../schemas/webhook";
import { pageResult } from "./listing";

const TAG = "Webhooks";
const notFoundResponse = { description: "No such webhook of the caller", schema: errorBody };
const invalid = { description: "Invalid body, or a receiver the outbound policy refuses", schema: errorBody };

export function webhookRoutes(deps: ApiDeps): Route[] {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const { store } = deps;
  const owned = async (userId: string, id: string) => {
    const w = await store.webhooks.getOwned(userId, id);
    if (!w) throw notFound(`webhook ${id.slice(0, 64)}`);
    return w;
  };

  /** Defaults: name from the url's host, every event (docs/api.md#spec-6-events lists eight). */
  const fields = async (userId: string, body: z.output<typeof webhookBody>): Promise<WebhookFields> => {
    if (body.streamId && !(await store.streams.getOwned(userId, body.streamId))) throw notFound(`streamId: stream ${body.streamId.slice(0, 64)}`);
    return {
      name: body.name ?? hostOf(body.url),
      url: body.url,
      events: [...new Set(body.events ?? EVENT_NAMES)],
      sharedSecret: body.sharedSecret ?? null,
      streamId: body.streamId ?? null,
    };
  };

  // Status codes: the SDK accepts only 200 with the webhook for create, update and delete.
  return [
    route({
      method: "post",
      path: "/webhook",
      tag: TAG,
      summary: "Register a webhook for some events of all the caller's streams",
      body: webhookBody,
      responses: { 200: { description: "The new webhook", schema: webhookObject }, 422: invalid },
      handle: async ({ userId, body }) => {
        const cap = async (webhooks: typeof store.webhooks) =>
          checkUserCap(await webhooks.countOwned(userId), 1, limits.maxWebhooksPerUser, "webhooks", "MAX_WEBHOOKS_PER_USER");
        await cap(store.webhooks);
        await checkDestinations(deps, [{ field: "url", host: hostOf(body.url) }]);
        const f = await fields(userId, body);
        const created = await store.transaction(async (tx) => {
          await lockKey(tx.db, `webhooks/${userId}`);
          await cap(tx.webhooks);
          return tx.webhooks.create(userId, f);
        });
        return { status: 200, body: presentWebhook(created) };
      },
    }),

    route({
      method: "get",
      path: "/webhook",
      tag: TAG,
      summary: "List the caller's webhooks, newest first",
      query: listQuery,
      responses: { 200: { description: "One page of webhooks", schema: webhookObject, list: true } },
      handle: ({ userId, query, req }) =>
        pageResult(req, store.webhooks.list(userId, { limit: query.limit, beforeSeq: decodeCursor(query.cursor) }), presentWebhook),
    }),

    route({
      method: "get",
      path: "/webhook/:id",
      tag: TAG,
      summary: "Get a webhook",
      responses: { 200: { description: "The webhook", schema: webhookObject }, 404: notFoundResponse },
      handle: async ({ userId, params }) => ({ status: 200, body: presentWebhook(await owned(userId, params.id!)) }),
    }),

    route({
      method: "put",
      path: "/webhook/:id",
      tag: TAG,
      summary: "Replace a webhook's fields",
      body: webhookBody,
      responses: { 200: { description: "The updated webhook", schema: webhookObject }, 404: notFoundResponse, 422: invalid },
      handle: async ({ userId, params, body }) => {
        const w = await owned(userId, params.id!);
        await checkDestinations(deps, [{ field: "url", host: hostOf(body.url) }]);
        await store.webhooks.replace(w.id, await fields(userId, body));
        return { status: 200, body: presentWebhook((await store.webhooks.get(w.id))!) };
      },
    }),

    route({
      method: "delete",
      path: "/webhook/:id",
      tag: TAG,
      summary: "Delete a webhook",
      responses: { 200: { description: "The deleted webhook", schema: webhookObject }, 404: notFoundResponse },
      handle: async ({ userId, params }) => {
        const w = await owned(userId, params.id!);
        await store.webhooks.delete(w.id);
        return { status: 200, body: presentWebhook(w) };
      },
    }),
  ];
}
