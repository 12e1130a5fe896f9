import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { PROFILE_NAME, type Profile, type Rendition } from "../shapes";

const LADDER_DIR = path.resolve(__dirname, "../../ffmpeg-profiles");

const ladderFile = z.object({
  description: z.string().optional(),
  profiles: z.array(
    z.object({
      name: z.string().regex(PROFILE_NAME, "must be 1-64 letters, digits, spaces, _ . or -"),
      bitrate: z.number().int().positive(),
      fps: z.number().int().positive(),
      width: z.number().int().positive(),
      height: z.number().int().positive(),
    }),
  ),
});

/** A named ladder from `ffmpeg-profiles/<name>.json` (`default`: 720p, 480p, 360p). */
export function loadLadder(name = "default", dir = LADDER_DIR): Profile[] {
  if (!/^[\w-]+$/.test(name)) throw new Error(`invalid ladder name "${name}"`);
  const file = path.join(dir, `${name}.json`);
  const parsed = ladderFile.safeParse(JSON.parse(fs.readFileSync(file, "utf8")));
  if (!parsed.success) throw new Error(`${file}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return parsed.data.profiles;
}

/** H.264 in 4:2:0 needs even dimensions: a profile asking for 853x480 gets 852x480. */
export const even = (n: number) => Math.max(2, n - (n % 2));

/**
 * Profiles → the renditions to produce; no profiles means passthrough (docs/api.md#spec-1-what-the-service-does):
 * the source as sent, or, when its encoder sends a ladder of its own (multitrack), each of its
 * video tracks as a rendition (`sourceTracks`: the track ids, the default 0 first).
 */
export function renditionLadder(profiles: Profile[], segmentSeconds: number, sourceTracks: readonly number[] = [0]): Rendition[] {
  if (profiles.length === 0) {
    const tracks = sourceTracks.length > 0 ? sourceTracks : [0];
    return tracks.map((track, index) => (track === 0 ? { index, name: "source", encode: null } : { index, name: `source track ${track}`, encode: null, track }));
  }
  return profiles.map((p, index) => ({
    index,
    name: p.name,
    encode: {
      width: even(p.width),
      height: even(p.height),
      fps: p.fps,
      bitrate: p.bitrate,
      gopFrames: Math.max(1, Math.round(p.fps * segmentSeconds)),
    },
  }));
}
