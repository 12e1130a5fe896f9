import type { SessionRecord, StreamRecord, TargetRecord, TargetRef, WebhookRecord } from "../db";
import type { SegmentCounters } from "../shapes";
import type { SessionJson } from "./schemas/session";
import type { StreamJson } from "./schemas/stream";
import type { TargetJson } from "./schemas/target";
import type { EventName, WebhookJson } from "./schemas/webhook";

// Records → the JSON the API returns. The types come from the response schemas, so the
// OpenAPI document and the bytes on the wire cannot drift apart.

/** Bytes per second, measured over the last 10 s of a live session. */
export interface LiveRates {
  /** received from the publisher */
  ingestRate: number;
  /** written out by the pipeline (every rendition's segments) */
  outgoingRate: number;
}

/** Not live: 0 rather than left out (the SDK expects numbers). */
const NO_RATE: LiveRates = { ingestRate: 0, outgoingRate: 0 };

/** Segment counters and live rates, as streams and sessions both report them. */
function mediaCounters(s: SegmentCounters, rates: LiveRates): SegmentCounters & LiveRates {
  const { sourceSegments, transcodedSegments, sourceSegmentsDuration, transcodedSegmentsDuration, sourceBytes, transcodedBytes } = s;
  return { sourceSegments, transcodedSegments, sourceSegmentsDuration, transcodedSegmentsDuration, sourceBytes, transcodedBytes, ...rates };
}

export function presentStream(s: StreamRecord, targets: TargetRef[], rates: LiveRates = NO_RATE): StreamJson {
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
    ...(s.playbackPolicy ? { playbackPolicy: { type: "public" as const } } : {}),
    ...mediaCounters(s, rates),
    lastTerminatedAt: s.lastTerminatedAt,
  };
}

export function recordingUrls(publicUrl: string, sessionId: string) {
  return {
    recordingUrl: `${publicUrl}/recordings/${sessionId}/index.m3u8`,
    mp4Url: `${publicUrl}/recordings/${sessionId}/output.mp4`,
  };
}

export function presentSession(s: SessionRecord, publicUrl: string, rates: LiveRates = NO_RATE): SessionJson {
  const recording: Partial<SessionJson> = {};
  if (s.record && s.recordingStatus) {
    recording.recordingStatus = s.recordingStatus;
    if (s.recordingStatus === "failed" && s.recordingError) recording.recordingError = s.recordingError;
    if (s.recordingStatus === "ready") {
      const urls = recordingUrls(publicUrl, s.id);
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
    ...mediaCounters(s, rates),
    ...recording,
    ...(s.endedAt !== null && s.endReason ? { endReason: s.endReason } : {}),
  };
}

/** Spec 2.4: a target's url is write-only; only the create response carries it. */
export function presentTarget(t: TargetRecord): TargetJson {
  return { id: t.id, userId: t.userId, name: t.name, disabled: t.disabled, createdAt: t.createdAt };
}

export function presentWebhook(w: WebhookRecord): WebhookJson {
  const status: NonNullable<WebhookJson["status"]> = {};
  if (w.lastTriggeredAt !== null) status.lastTriggeredAt = w.lastTriggeredAt;
  if (w.lastFailure) status.lastFailure = w.lastFailure;
  return {
    id: w.id,
    kind: "webhook",
    userId: w.userId,
    name: w.name,
    url: w.url,
    events: w.events as EventName[],
    createdAt: w.createdAt,
    ...(w.sharedSecret !== null ? { sharedSecret: w.sharedSecret } : {}),
    ...(w.streamId !== null ? { streamId: w.streamId } : {}),
    ...(Object.keys(status).length ? { status } : {}),
  };
}
