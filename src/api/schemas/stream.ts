import { z } from "zod";
import { expected, reconnectWindow } from "../../shapes";
import { listQuery, profiles, queryFlag, targetUrl } from "./common";

export const playbackPolicy = z
  .object({
    type: z.enum(["public", "jwt", "webhook"]),
    webhookId: z.string().optional(),
    webhookContext: z.record(z.string(), z.unknown()).optional(),
    refreshInterval: z.number().optional(),
    allowedOrigins: z.array(z.string()).optional(),
  })
  .meta({ id: "PlaybackPolicy", description: "Only `public` playback is implemented." });

export const targetRefInput = z
  .object({
    id: z.string().min(1).max(200).optional().describe("id of an existing multistream target of the caller"),
    profile: z
      .string(expected("a string"))
      .min(1, "must not be empty")
      .describe("`source`, or the name of one of the stream's profiles"),
    videoOnly: z.boolean().default(false),
    spec: z
      .object({ name: z.string().trim().min(1).max(500).optional(), url: targetUrl, tlsVerify: z.boolean(expected("a boolean")).optional().describe("onair extension: see MultistreamTarget") })
      .optional()
      .describe("creates a new target on the fly"),
  })
  .superRefine((t, ctx) => {
    if ((t.id === undefined) === (t.spec === undefined)) {
      ctx.addIssue({ code: "custom", message: "each target needs exactly one of id or spec" });
    }
  });

export const multistreamInput = z
  .object({
    targets: z
      .array(targetRefInput)
      // The cap is a setting (MAX_TARGETS_PER_STREAM), checked by the stream routes.
      .describe("at most MAX_TARGETS_PER_STREAM (default 10) targets")
      .default([]),
  })
  .meta({ id: "MultistreamInput", description: "The stream's multistream target references, as a whole." });

const streamName = z
  .string(expected("a string"))
  .trim()
  .min(1, "must not be empty")
  .max(500, "must be at most 500 characters");

export const streamCreateBody = z
  .object({
    name: streamName,
    profiles: profiles.nullable().optional(),
    record: z.boolean(expected("a boolean")).optional(),
    multistream: multistreamInput.optional(),
    playbackPolicy: playbackPolicy.nullable().optional(),
    reconnectWindow: reconnectWindow.optional(),
    pull: z.unknown().optional().describe("not supported: onair ingests by RTMP push"),
  })
  .meta({ id: "NewStreamPayload" });

export const streamPatchBody = z
  .object({
    name: streamName.optional(),
    profiles: profiles.nullable().optional(),
    record: z.boolean(expected("a boolean")).optional(),
    suspended: z.boolean(expected("a boolean")).optional(),
    multistream: multistreamInput.optional(),
    playbackPolicy: playbackPolicy.nullable().optional(),
    reconnectWindow: reconnectWindow.optional(),
  })
  .meta({ id: "StreamPatchPayload" });

export const recordPatchBody = z
  .object({ record: z.boolean(expected("a boolean")) })
  .meta({ id: "RecordPatchPayload" });

export const streamListQuery = listQuery.extend({
  streamsonly: queryFlag,
  filters: z.string().max(10_000).optional().describe("URL-encoded JSON array of {id, value}"),
});
