import { z } from "zod";
import { mediaCounterFields, mediaCounters, NO_RATE, type LiveRates, type SegmentCounters } from "./counters";
import { expected } from "./messages";
import { playbackPolicyObject, type PlaybackPolicy } from "./playbackPolicy";
import { profile, type Profile } from "./profile";
import { pullConfig } from "./pull";

// The stream object: what the API returns and what every webhook delivery carries (without
// its key). The type comes from the schema, so the OpenAPI document and the bytes on the wire
// cannot drift apart.

/** Highest RECONNECT_WINDOW_SECONDS and per-stream reconnectWindow: 30 minutes. */
export const MAX_RECONNECT_WINDOW_SECONDS = 1800;

/** onair's extension (like Mux's reconnect_window): seconds a session waits for its publisher to come back. */
export const reconnectWindow = z
  .number(expected("a number"))
  .int("must be a whole number of seconds")
  .min(0, "must be at least 0")
  .max(MAX_RECONNECT_WINDOW_SECONDS, `must be at most ${MAX_RECONNECT_WINDOW_SECONDS} seconds`)
  .nullable()
  .describe("onair: seconds the live session waits for its publisher to reconnect (0 ends it at once; null: the server's RECONNECT_WINDOW_SECONDS, 30 by default)");

/** Highest DVR_WINDOW_SECONDS and per-stream dvrWindow: 6 hours. */
export const MAX_DVR_WINDOW_SECONDS = 21_600;

/** onair's extension: seconds of the live stream its playlists keep listed, for viewers to seek back in (0: off). */
export const dvrWindow = z
  .number(expected("a number"))
  .int("must be a whole number of seconds")
  .min(0, "must be at least 0")
  .max(MAX_DVR_WINDOW_SECONDS, `must be at most ${MAX_DVR_WINDOW_SECONDS} seconds`)
  .nullable()
  .describe("onair: seconds of the live stream its playlists list, so viewers can seek back (0: off; null: the server's DVR_WINDOW_SECONDS, 0 by default)");

/** The DVR window a stream's session uses: its own dvrWindow, else the server's DVR_WINDOW_SECONDS. */
export function dvrWindowSeconds(own: number | null | undefined, serverDefault: number): number {
  return own ?? serverDefault;
}

/** Livepeer's isHealthy and issues, while a stream has an open session (live or reconnecting). */
export interface LiveHealth {
  isHealthy: boolean;
  issues: string[];
}

export const targetRef = z.object({ id: z.string(), profile: z.string(), videoOnly: z.boolean() });

export const streamObject = z
  .object({
    id: z.string(),
    kind: z.literal("stream"),
    name: z.string(),
    userId: z.string(),
    createdAt: z.number(),
    parentId: z.string().optional().describe("present only on historic child stream objects"),
    streamKey: z.string().optional().describe("parent streams only"),
    srtUrl: z
      .string()
      .optional()
      .describe("SRT ingest (when the server has SRT_PORTS): srt://host:port?passphrase=…&latency=…, for OBS or ffmpeg in caller mode; a streamid is accepted and ignored"),
    playbackId: z.string().optional(),
    isActive: z.boolean(),
    lastSeen: z.number(),
    record: z.boolean(),
    suspended: z.boolean(),
    profiles: z.array(profile),
    multistream: z.object({ targets: z.array(targetRef) }).optional(),
    playbackPolicy: playbackPolicyObject.optional(),
    ...mediaCounterFields,
    lastTerminatedAt: z.number().nullable(),
    isHealthy: z.boolean().nullable().describe("while a session is open: false when `issues` lists a problem; null otherwise"),
    issues: z.array(z.string()).nullable().describe("what makes the live stream unhealthy, for a broadcaster to act on; null when not live"),
    reconnectWindow: reconnectWindow.optional(),
    dvrWindow: dvrWindow.optional(),
    pull: pullConfig.optional().describe("the pull source, when onair pulls the stream (the API's view only: webhook payloads never carry it, its url and headers may hold credentials)"),
  })
  .meta({ id: "Stream" });

export type StreamJson = z.infer<typeof streamObject>;

/** What presentStream reads of a stored stream (the database's stream record has all of it). */
export interface StoredStream extends SegmentCounters {
  id: string;
  userId: string;
  parentId: string | null;
  name: string;
  streamKey: string | null;
  playbackId: string | null;
  createdAt: number;
  isActive: boolean;
  lastSeen: number;
  record: boolean;
  suspended: boolean;
  profiles: Profile[];
  playbackPolicy: PlaybackPolicy | null;
  lastTerminatedAt: number | null;
  reconnectWindow: number | null;
  dvrWindow: number | null;
}

export function presentStream(s: StoredStream, targets: z.infer<typeof targetRef>[], rates: LiveRates = NO_RATE, health?: LiveHealth): StreamJson {
  const isChild = s.parentId !== null;
  return {
    id: s.id,
    kind: "stream",
    name: s.name,
    userId: s.userId,
    createdAt: s.createdAt,
    ...(isChild ? { parentId: s.parentId! } : { streamKey: s.streamKey!, playbackId: s.playbackId! }),
    isActive: s.isActive,
    lastSeen: s.lastSeen,
    record: s.record,
    suspended: s.suspended,
    profiles: s.profiles,
    ...(isChild ? {} : { multistream: { targets } }),
    ...(s.playbackPolicy ? { playbackPolicy: s.playbackPolicy } : {}),
    ...mediaCounters(s, rates),
    lastTerminatedAt: s.lastTerminatedAt,
    isHealthy: health?.isHealthy ?? null,
    issues: health?.issues ?? null,
    ...(isChild ? {} : { reconnectWindow: s.reconnectWindow, dvrWindow: s.dvrWindow }),
  };
}
