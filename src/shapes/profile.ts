import { z } from "zod";
import { expected } from "./messages";

const positiveInt = (what: string, max: number) =>
  z
    .number(expected("a number"))
    .int("must be an integer")
    .positive("must be positive")
    .max(max, `must be at most ${max}`);

/** What a profile (rendition) name may be made of. */
export const PROFILE_NAME = /^[A-Za-z0-9 _.-]{1,64}$/;

export const H264_PROFILES = ["H264Baseline", "H264Main", "H264High", "H264ConstrainedHigh"] as const;

/** One rendition of a stream's ladder: what a stream is created with, stored, and reported. */
export const profile = z
  .object({
    // The name reaches playlists (the master's NAME) and logs: a closed alphabet, so no user
    // text can break a line or a quoted attribute.
    name: z
      .string(expected("a string"))
      .trim()
      .min(1, "must not be empty")
      .max(64, "must be at most 64 characters")
      .regex(PROFILE_NAME, "must be letters, digits, spaces, _ . or - only"),
    bitrate: positiveInt("bitrate", 100_000_000).describe("bits per second"),
    fps: positiveInt("fps", 240),
    width: positiveInt("width", 7680),
    height: positiveInt("height", 4320),
    fpsDen: positiveInt("fpsDen", 1001).optional(),
    gop: z.string().max(32).optional().describe("keyframe interval in seconds"),
    profile: z.enum(H264_PROFILES).optional(),
    encoder: z.literal("H.264").optional(),
    quality: z.number().int().min(0).max(51).optional(),
  })
  .meta({ id: "Profile", description: "A rendition of the transcoding ladder." });

export type Profile = z.infer<typeof profile>;
