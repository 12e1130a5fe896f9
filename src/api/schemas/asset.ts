import { z } from "zod";
import { CLIP_END_AHEAD_MS } from "../../assets";
import { expected } from "../../shapes";

/** Wall-clock ms since the epoch, as Livepeer's clip API takes them. */
const epochMs = z.number(expected("a number (ms since the epoch)")).int("must be an integer (ms since the epoch)").min(0, "must not be negative").max(8.64e15, "must be a valid time (ms since the epoch)");

export const clipBody = z
  .object({
    playbackId: z.string(expected("a string")).min(1, "must not be empty").max(200).describe("playback id of one of the caller's streams"),
    startTime: epochMs.describe("wall-clock ms of the clip's start; it starts at the keyframe at or before it"),
    endTime: epochMs.optional().describe(`wall-clock ms of the clip's end; default: the newest media, at most MAX_CLIP_SECONDS after startTime. Past the newest media but at most ${CLIP_END_AHEAD_MS / 1000} s after now ("the last N s" asked with endTime = now): the newest media`),
    name: z.string(expected("a string")).trim().min(1, "must not be empty").max(500).optional(),
    sessionId: z.string(expected("a string")).min(1, "must not be empty").max(200).optional().describe("the session to clip (its recording once it is out of the live window); default: the stream's current or latest"),
  })
  .superRefine((b, ctx) => {
    if (b.endTime !== undefined && b.endTime <= b.startTime) ctx.addIssue({ code: "custom", path: ["endTime"], message: `must be after startTime (${b.startTime})` });
  })
  .meta({ id: "ClipPayload" });

const assetTrack = z.object({
  type: z.enum(["video", "audio"]),
  codec: z.string(),
  width: z.number().optional(),
  height: z.number().optional(),
  channels: z.number().optional(),
  sampleRate: z.number().optional(),
});

export const assetObject = z
  .object({
    id: z.string(),
    type: z.literal("video"),
    playbackId: z.string().describe("the asset's own playback id (GET /playback/{id} answers `vod`)"),
    userId: z.string(),
    name: z.string(),
    createdAt: z.number(),
    source: z.object({
      type: z.literal("clip"),
      sessionId: z.string(),
      playbackId: z.string().describe("the stream's"),
      sourceId: z.string().describe("the stream's id"),
      startTime: z.number().describe("wall-clock ms the clip starts at: the keyframe at or before the startTime asked for"),
      endTime: z.number().describe(`wall-clock ms the clip ends at: the endTime asked for, or the newest media when none was asked or it was at most ${CLIP_END_AHEAD_MS / 1000} s after now`),
    }),
    status: z.object({
      phase: z.enum(["waiting", "processing", "ready", "failed"]),
      updatedAt: z.number(),
      progress: z.number().optional().describe("0 to 1 while processing"),
      errorMessage: z.string().optional(),
    }),
    playbackUrl: z.string().optional().describe("HLS, once ready"),
    downloadUrl: z.string().optional().describe("MP4, once ready"),
    size: z.number().optional().describe("bytes of the MP4"),
    videoSpec: z.object({ format: z.string(), duration: z.number().optional(), bitrate: z.number().optional(), tracks: z.array(assetTrack) }).optional(),
  })
  .meta({ id: "Asset" });

export const createClipAnswer = z.object({ asset: assetObject, task: z.object({ id: z.string() }) }).meta({ id: "CreateClipAnswer" });
