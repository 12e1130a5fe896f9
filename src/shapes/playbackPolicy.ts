import { z } from "zod";

// Who may watch a stream (Livepeer's playbackPolicy): anyone with the playback id (`public`), a
// viewer holding a JWT signed by one of the owner's signing keys (`jwt`), or a viewer the
// owner's own webhook admits (`webhook`).

/** How long a webhook's answer about one viewer is kept when the policy names no refreshInterval (seconds). */
export const DEFAULT_POLICY_REFRESH_SECONDS = 30;
/** The longest a webhook's answer is kept, whatever refreshInterval asks. */
export const MAX_POLICY_REFRESH_SECONDS = 3600;

export const playbackPolicyObject = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("public") }),
    z.object({ type: z.literal("jwt") }),
    z.object({
      type: z.literal("webhook"),
      webhookId: z.string(),
      webhookContext: z.record(z.string(), z.unknown()).optional(),
      refreshInterval: z.number().optional().describe("seconds an answer of the webhook is kept for a viewer"),
    }),
  ])
  .meta({ id: "PlaybackPolicyObject" });

export type PlaybackPolicy = z.infer<typeof playbackPolicyObject>;

/** Whether viewers need to show something before they watch. */
export const isGated = (p: PlaybackPolicy | null | undefined): p is Exclude<PlaybackPolicy, { type: "public" }> => p !== null && p !== undefined && p.type !== "public";
