import { z } from "zod";
import type { WebhookLogRecord } from "../../db";
import { firstAttempt, resendLoggedEvent } from "../../webhooks";
import type { ApiDeps } from "../deps";
import { notFound } from "../errors";
import { decodeCursor } from "../pagination";
import { route, type Route } from "../route";
import { errorBody, listQuery } from "../schemas/common";
import { pageResult } from "./listing";

const TAG = "Webhooks";

// The shape of Livepeer Studio's webhook log (the SDK's `WebhookLog`), plus the attempt number,
// the event id and, for attempts without a response, why.
export const webhookLogObject = z
  .object({
    id: z.string(),
    webhookId: z.string(),
    event: z.string(),
    eventId: z.string().describe("the event's id, as in the delivery body: the same on every attempt and resend"),
    createdAt: z.number().describe("when the attempt started (ms)"),
    duration: z.number().describe("seconds"),
    success: z.boolean(),
    attempt: z.number().describe("1 for a delivery's first attempt, then 2, 3…"),
    request: z.object({
      url: z.string(),
      method: z.string(),
      headers: z.record(z.string(), z.string()),
      body: z.string(),
    }),
    response: z
      .object({ status: z.number(), statusText: z.string(), body: z.string().describe("the first 4 KiB at most") })
      .optional()
      .describe("absent when no response came"),
    error: z.string().optional().describe("why the attempt failed"),
  })
  .meta({ id: "WebhookLog" });

export type WebhookLogJson = z.infer<typeof webhookLogObject>;

const queuedResend = z
  .object({
    id: z.string().describe("the new delivery"),
    webhookId: z.string(),
    event: z.string(),
    eventId: z.string(),
    createdAt: z.number(),
    queued: z.literal(true),
  })
  .meta({ id: "QueuedResend" });

export function presentWebhookLog(l: WebhookLogRecord): WebhookLogJson {
  return {
    id: l.id,
    webhookId: l.webhookId,
    event: l.event,
    eventId: l.eventId,
    createdAt: l.createdAt,
    duration: l.durationMs / 1000,
    success: l.success,
    attempt: l.attempt,
    request: { url: l.url, method: "POST", headers: l.requestHeaders, body: l.requestBody },
    ...(l.statusCode !== null ? { response: { status: l.statusCode, statusText: l.statusText ?? "", body: l.responseBody ?? "" } } : {}),
    ...(l.error !== null ? { error: l.error } : {}),
  };
}

/** A resend answers with its attempt; an attempt takes at most the 10 s default timeout. */
const RESEND_WAIT_MS = 12_000;

export function webhookLogRoutes(deps: ApiDeps): Route[] {
  const { store } = deps;
  const ownedWebhook = async (userId: string, id: string) => {
    const w = await store.webhooks.getOwned(userId, id);
    if (!w) throw notFound(`webhook ${id.slice(0, 64)}`);
    return w;
  };
  const logEntry = async (webhookId: string, logId: string) => {
    const entry = await store.webhookLog.get(webhookId, logId);
    if (!entry) throw notFound(`log entry ${logId.slice(0, 64)}`);
    return entry;
  };
  const notFoundResponse = { description: "No such webhook of the caller, or no such entry in its log", schema: errorBody };

  return [
    route({
      method: "get",
      path: "/webhook/:id/log",
      tag: TAG,
      summary: "List a webhook's delivery attempts, newest first",
      query: listQuery,
      responses: {
        200: { description: "One page of attempts", schema: webhookLogObject, list: true },
        404: notFoundResponse,
      },
      handle: async ({ userId, params, query, req }) => {
        const w = await ownedWebhook(userId, params.id!);
        return pageResult(req, store.webhookLog.list(w.id, { limit: query.limit, beforeSeq: decodeCursor(query.cursor) }), presentWebhookLog);
      },
    }),

    route({
      method: "get",
      path: "/webhook/:id/log/:logId",
      tag: TAG,
      summary: "Get one delivery attempt",
      responses: { 200: { description: "The attempt", schema: webhookLogObject }, 404: notFoundResponse },
      handle: async ({ userId, params }) => {
        const w = await ownedWebhook(userId, params.id!);
        return { status: 200, body: presentWebhookLog(await logEntry(w.id, params.logId!)) };
      },
    }),

    route({
      method: "post",
      path: "/webhook/:id/log/:logId/resend",
      tag: TAG,
      summary: "Send a logged event again (same event id, new timestamp and signature), retried like any delivery",
      responses: {
        200: { description: "The resend's first attempt", schema: webhookLogObject },
        202: {
          description: "Queued behind an earlier delivery of the same stream that is still being retried: it appears in the log once sent",
          schema: queuedResend,
        },
        404: notFoundResponse,
      },
      handle: async ({ userId, params }) => {
        const w = await ownedWebhook(userId, params.id!);
        const entry = await logEntry(w.id, params.logId!);
        const { delivery, isLaneHead } = await resendLoggedEvent(store, entry);
        // Behind an earlier delivery being retried, it may wait minutes: say so at once.
        const attempt = isLaneHead ? await firstAttempt(store, delivery.id, RESEND_WAIT_MS) : undefined;
        if (attempt) return { status: 200, body: presentWebhookLog(attempt) };
        return {
          status: 202,
          body: { id: delivery.id, webhookId: w.id, event: entry.event, eventId: entry.eventId, createdAt: delivery.createdAt, queued: true },
        };
      },
    }),
  ];
}
