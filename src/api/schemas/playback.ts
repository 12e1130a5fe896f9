import { z } from "zod";

export const playbackInfoObject = z
  .object({
    type: z.enum(["live", "recording"]),
    meta: z.object({
      live: z.union([z.literal(0), z.literal(1)]).optional(),
      playbackPolicy: z.object({ type: z.literal("public") }).optional(),
      source: z.array(
        z.object({
          hrn: z.enum(["HLS (TS)", "MP4"]),
          type: z.enum(["html5/application/vnd.apple.mpegurl", "html5/video/mp4"]),
          url: z.string(),
        }),
      ),
    }),
  })
  .meta({ id: "PlaybackInfo" });

export type PlaybackInfoJson = z.infer<typeof playbackInfoObject>;
