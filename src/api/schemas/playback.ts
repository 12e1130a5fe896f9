import { z } from "zod";

export const playbackInfoObject = z
  .object({
    type: z.enum(["live", "recording", "vod"]),
    meta: z.object({
      live: z.union([z.literal(0), z.literal(1)]).optional(),
      // Only the type: this answer needs no authorization, and a webhook policy's details are the owner's.
      playbackPolicy: z.object({ type: z.enum(["public", "jwt", "webhook"]) }).optional(),
      source: z.array(
        z.object({
          hrn: z.enum(["HLS (TS)", "WebRTC (H264)", "MP4", "Thumbnail (JPEG)", "Storyboard (VTT)"]),
          type: z.enum(["html5/application/vnd.apple.mpegurl", "html5/video/h264", "html5/video/mp4", "image/jpeg", "text/vtt"]),
          url: z.string(),
        }),
      ),
    }),
  })
  .meta({ id: "PlaybackInfo" });

export type PlaybackInfoJson = z.infer<typeof playbackInfoObject>;
