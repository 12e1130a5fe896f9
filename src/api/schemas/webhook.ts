import { z } from "zod";
import { EVENT_NAMES, expected } from "../../shapes";
import { httpUrl } from "./common";

export const webhookBody = z
  .object({
    name: z.string(expected("a string")).trim().min(1).max(500).optional().describe("defaults to the host of url"),
    url: httpUrl,
    events: z
      .array(z.enum(EVENT_NAMES, { error: `must be one of ${EVENT_NAMES.join(", ")}` }))
      .max(EVENT_NAMES.length * 2)
      .optional()
      .describe("defaults to every event"),
    sharedSecret: z.string(expected("a string")).min(1).max(1024).nullable().optional(),
    streamId: z.string().max(200).nullable().optional().describe("only this stream's events"),
  })
  .meta({ id: "WebhookInput" });

export const webhookObject = z
  .object({
    id: z.string(),
    kind: z.literal("webhook"),
    userId: z.string(),
    name: z.string(),
    url: z.string(),
    events: z.array(z.enum(EVENT_NAMES)),
    createdAt: z.number(),
    sharedSecret: z.string().optional(),
    streamId: z.string().optional(),
    status: z
      .object({
        lastTriggeredAt: z.number().optional(),
        lastFailure: z
          .object({ timestamp: z.number(), error: z.string(), statusCode: z.number().optional(), response: z.string().optional() })
          .optional(),
      })
      .optional(),
  })
  .meta({ id: "Webhook" });

export type WebhookJson = z.infer<typeof webhookObject>;
