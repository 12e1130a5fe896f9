import { z } from "zod";
import { profile } from "../../shapes";
import { listQuery, mediaCounters, queryFlag } from "./common";

export const sessionObject = z
  .object({
    id: z.string(),
    kind: z.literal("session"),
    userId: z.string(),
    name: z.string(),
    parentId: z.string(),
    playbackId: z.string().optional(),
    createdAt: z.number(),
    lastSeen: z.number(),
    isActive: z.boolean().describe("true while the session is live"),
    record: z.boolean(),
    profiles: z.array(profile),
    ...mediaCounters,
    recordingStatus: z.enum(["waiting", "ready", "failed", "deleted", "none"]).optional(),
    recordingUrl: z.string().optional().describe("HLS playlist of the recording"),
    mp4Url: z.string().optional(),
    mp4URL: z.string().optional().describe("same as mp4Url"),
    recordingError: z.string().optional().describe("why a recording failed"),
    endReason: z
      .string()
      .optional()
      .describe('why the live session ended, once it has: "publisher left", "suspended", "pipeline failed: …", "storage unavailable: …"'),
  })
  .meta({ id: "Session" });

export type SessionJson = z.infer<typeof sessionObject>;

export const parentSessionsQuery = listQuery.extend({ record: queryFlag });
