import { z } from "zod";
import { parseTargetUrl } from "../../multistream";
import { expected, profile } from "../../shapes";

export const errorBody = z
  .object({ errors: z.array(z.string()) })
  .meta({ id: "Error", description: "Every error response: one or more human-readable messages." });

// How many profiles a stream may have is a setting (MAX_PROFILES_PER_STREAM), checked by the
// stream routes against the config, so this schema stays static for the OpenAPI document.
export const profiles = z
  .array(profile)
  .describe("at most MAX_PROFILES_PER_STREAM (default 10) profiles")
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((p, i) => {
      if (seen.has(p.name)) {
        ctx.addIssue({ code: "custom", path: [i, "name"], message: `duplicate profile name "${p.name}"` });
      }
      seen.add(p.name);
    });
  });

/** `1`/`true` and `0`/`false`, as query strings carry booleans. */
export const queryFlag = z
  .enum(["1", "0", "true", "false"], { error: "must be 1, 0, true or false" })
  .optional()
  .transform((v) => v === "1" || v === "true");

export const listQuery = z.object({
  limit: z.coerce
    .number({ error: "must be a number" })
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(1000, "must be at most 1000")
    .default(20),
  cursor: z.string().max(200).optional(),
});

/**
 * `rtmp://`, `rtmps://` or `srt://` with a host: where a multistream target sends media. Parsed
 * and rebuilt (src/multistream/targetUrl.ts): the canonical string is what is stored, returned
 * and handed to ffmpeg.
 */
export const targetUrl = z
  .string(expected("a string"))
  .max(2048, "must be at most 2048 characters")
  .transform((v, ctx) => {
    const parsed = parseTargetUrl(v);
    if (parsed.ok) return parsed.url.canonical;
    ctx.addIssue({ code: "custom", message: parsed.error });
    return z.NEVER;
  })
  .describe("rtmp://host[:port]/app/streamkey[?query], rtmps://… or srt://host:port[?options]; srt options: caller mode only, streamid, passphrase, pbkeylen, latency, timeout, connect_timeout, pkt_size, payload_size");

/** Where webhooks are delivered: an http(s) URL with a host. */
export const httpUrl = z
  .string(expected("a string"))
  .max(2048, "must be at most 2048 characters")
  .superRefine((v, ctx) => {
    const url = parseUrl(v);
    if (!url || !url.hostname || !["http:", "https:"].includes(url.protocol)) {
      ctx.addIssue({ code: "custom", message: `must be an http:// or https:// URL, got "${v.slice(0, 100)}"` });
    }
  });

export function parseUrl(v: string): URL | undefined {
  try {
    return new URL(v);
  } catch {
    return undefined;
  }
}

/** `rtmp://a.rtmp.youtube.com/live2/…` → `a.rtmp.youtube.com` (docs/api.md#spec-43-multistream-targets rule 1). */
export function hostOf(v: string): string {
  return parseUrl(v)?.hostname ?? v;
}
