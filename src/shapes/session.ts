import { z } from "zod";
import { mediaCounterFields, mediaCounters, NO_RATE, type LiveRates, type SegmentCounters } from "./counters";
import { profile, type Profile } from "./profile";

// The session object: what the API returns and what recording.ready carries.

/** How a publisher reaches onair; every protocol lands on the same sessions. */
export const INGEST_PROTOCOLS = ["rtmp", "webrtc", "srt", "pull"] as const;
export type IngestProtocol = (typeof INGEST_PROTOCOLS)[number];

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
    isActive: z.boolean().describe("true while the session is open: live, or waiting inside its reconnect window for the publisher to come back"),
    record: z.boolean(),
    profiles: z.array(profile),
    protocol: z.enum(INGEST_PROTOCOLS).describe("how the publisher reached onair: rtmp, webrtc (WHIP), srt, or pull (onair read the stream's pull source)"),
    ...mediaCounterFields,
    recordingStatus: z.enum(["waiting", "ready", "failed", "deleted", "none"]).optional(),
    recordingUrl: z.string().optional().describe("HLS playlist of the recording; signed (its `sig` query parameter is what opens it)"),
    mp4Url: z.string().optional().describe("MP4 of the recording; signed like recordingUrl"),
    mp4URL: z.string().optional().describe("same as mp4Url"),
    recordingError: z.string().optional().describe("why a recording failed"),
    endReason: z
      .string()
      .optional()
      .describe('why the live session ended, once it has: "publisher left", "suspended", "pipeline failed: …", "storage unavailable: …"'),
  })
  .meta({ id: "Session" });

export type SessionJson = z.infer<typeof sessionObject>;

/** What presentSession reads of a stored session (the database's session record has all of it). */
export interface StoredSession extends SegmentCounters {
  id: string;
  userId: string;
  parentId: string;
  name: string;
  playbackId: string | null;
  createdAt: number;
  endedAt: number | null;
  lastSeen: number;
  record: boolean;
  profiles: Profile[];
  recordingStatus: SessionJson["recordingStatus"] | null;
  recordingError: string | null;
  endReason: string | null;
  protocol: IngestProtocol;
}

/** Where recordings are served, and how their URLs are signed (src/recordings keeps the key). */
export interface RecordingLinks {
  /** PUBLIC_URL */
  publicUrl: string;
  /** The `sig` that lets a URL's holder read this session's recording. */
  sign(sessionId: string): string;
}

/** A recording's URLs: the paths of docs/architecture.md#public-urls, signed so that a session id alone opens nothing. */
export function recordingUrls(links: RecordingLinks, sessionId: string) {
  const sig = `?sig=${links.sign(sessionId)}`;
  return {
    recordingUrl: `${links.publicUrl}/recordings/${sessionId}/index.m3u8${sig}`,
    mp4Url: `${links.publicUrl}/recordings/${sessionId}/output.mp4${sig}`,
  };
}

export function presentSession(s: StoredSession, links: RecordingLinks, rates: LiveRates = NO_RATE): SessionJson {
  const recording: Partial<SessionJson> = {};
  if (s.record && s.recordingStatus) {
    recording.recordingStatus = s.recordingStatus;
    if (s.recordingStatus === "failed" && s.recordingError) recording.recordingError = s.recordingError;
    if (s.recordingStatus === "ready") {
      const urls = recordingUrls(links, s.id);
      Object.assign(recording, { recordingUrl: urls.recordingUrl, mp4Url: urls.mp4Url, mp4URL: urls.mp4Url });
    }
  }
  return {
    id: s.id,
    kind: "session",
    userId: s.userId,
    name: s.name,
    parentId: s.parentId,
    ...(s.playbackId ? { playbackId: s.playbackId } : {}),
    createdAt: s.createdAt,
    lastSeen: s.lastSeen,
    isActive: s.endedAt === null,
    record: s.record,
    profiles: s.profiles,
    protocol: s.protocol,
    ...mediaCounters(s, rates),
    ...recording,
    ...(s.endedAt !== null && s.endReason ? { endReason: s.endReason } : {}),
  };
}
