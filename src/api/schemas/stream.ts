import { z } from "zod";
import { dvrWindow, expected, pullConfig, reconnectWindow } from "../../shapes";
import { listQuery, profiles, queryFlag, targetUrl } from "./common";

export const playbackPolicy = z
  .object({
    type: z.enum(["public", "jwt", "webhook"]),
    webhookId: z.string().min(1).max(200).optional().describe("`webhook` policy: the caller's webhook asked whether a viewer may watch"),
    webhookContext: z.record(z.string(), z.unknown()).optional().describe("`webhook` policy: sent to the webhook with every question"),
    refreshInterval: z.number().positive().optional().describe("`webhook` policy: seconds an answer is kept for a viewer (default 30, at most 3600)"),
    allowedOrigins: z.array(z.string()).optional().describe("accepted and not enforced"),
  })
  .meta({
    id: "PlaybackPolicy",
    description:
      "`public`: anyone with the playback id watches. `jwt`: a JWT signed (ES256) by one of the owner's enabled signing keys, `sub` = playback id, `pub` = the key's publicKey, `exp` required, as `?jwt=` or a `Livepeer-Jwt` header. `webhook`: onair POSTs `{accessKey, context, timestamp}` to the webhook; a 2xx admits the viewer (`?accessKey=`).",
  });

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
    dvrWindow: dvrWindow.optional(),
    pull: pullConfig.optional().describe("onair pulls the stream from this source instead of waiting for a push"),
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
    dvrWindow: dvrWindow.optional(),
    pull: pullConfig.nullable().optional().describe("onair extension (Livepeer sets pull at creation only): a new pull source, or null to stop pulling"),
  })
  .meta({ id: "StreamPatchPayload" });

export const recordPatchBody = z
  .object({ record: z.boolean(expected("a boolean")) })
  .meta({ id: "RecordPatchPayload" });

export const streamListQuery = listQuery.extend({
  streamsonly: queryFlag,
  filters: z.string().max(10_000).optional().describe("URL-encoded JSON array of {id, value}"),
});
