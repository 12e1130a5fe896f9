import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { PROFILE_NAME, type Profile, type Rendition, type SourceTrack } from "../shapes";

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

/** A track this many pixels off a profile's width and height still has its size (853 vs 854 wide). */
const SIZE_SLACK = 4;

/**
 * Profiles → the renditions to produce; no profiles means passthrough (docs/api.md#spec-1-what-the-service-does):
 * the source as sent, or, when its encoder sends a ladder of its own (multitrack), each of its
 * video tracks as a rendition (`sourceTracks`: the default track 0 first). With profiles and an
 * encoder's ladder, a profile whose size one of its H.264 tracks has is that track as sent (the
 * encoder made it already); the others are encoded from the top track.
 */
export function renditionLadder(profiles: Profile[], segmentSeconds: number, sourceTracks: readonly SourceTrack[] = [{ id: 0 }]): Rendition[] {
  if (profiles.length === 0) {
    const tracks = sourceTracks.length > 0 ? sourceTracks.map((t) => t.id) : [0];
    return tracks.map((track, index) => (track === 0 ? { index, name: "source", encode: null } : { index, name: `source track ${track}`, encode: null, track }));
  }
  const taken = matchTracks(profiles, sourceTracks);
  return profiles.map((p, index) => {
    const track = taken[index];
    if (track !== undefined) return { index, name: p.name, encode: null, ...(track !== 0 ? { track } : {}) };
    return {
      index,
      name: p.name,
      encode: {
        width: even(p.width),
        height: even(p.height),
        fps: p.fps,
        bitrate: p.bitrate,
        gopFrames: Math.max(1, Math.round(p.fps * segmentSeconds)),
      },
    };
  });
}

/**
 * For each profile, the track of an encoder's ladder that has its size (each track taken once,
 * profiles in order), or undefined. Only a ladder (two tracks or more) is matched: a single
 * source of a profile's size is still encoded, to the profile's bit rate and keyframes. Only
 * H.264 tracks: the encoded rungs are H.264, and so is what WebRTC playback carries. And only
 * when the default track is H.264 too: it then reaches ffmpeg as FLV, on the publisher's clock
 * like the copied tracks; HEVC or AV1 reaches it as MP4 timed from its first frame, and copied
 * rungs beside it would be as far off as the publisher's clock was from zero (stalling them).
 */
export function matchTracks(profiles: readonly Profile[], tracks: readonly SourceTrack[]): (number | undefined)[] {
  const onPublisherClock = tracks.length > 1 && tracks.find((t) => t.id === 0)?.codec === "avc1";
  const free = onPublisherClock ? tracks.filter((t) => t.codec === "avc1" && t.width !== undefined && t.height !== undefined) : [];
  return profiles.map((p) => {
    const i = free.findIndex((t) => Math.abs(t.width! - even(p.width)) <= SIZE_SLACK && Math.abs(t.height! - even(p.height)) <= SIZE_SLACK);
    return i < 0 ? undefined : free.splice(i, 1)[0]!.id;
  });
}
