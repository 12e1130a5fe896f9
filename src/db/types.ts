import type { IngestProtocol, PlaybackPolicy, Profile, PullConfig, SegmentCounters } from "../shapes";

// Domain records as the repositories return them (camelCase, booleans, parsed JSON).

export type { PlaybackPolicy };

export interface StreamRecord extends SegmentCounters {
  seq: number;
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
  deletedAt: number | null;
  /** Seconds a session waits for its publisher to come back; null: RECONNECT_WINDOW_SECONDS. */
  reconnectWindow: number | null;
  /** Seconds of the live stream its playlists list for seeking back (0: off); null: DVR_WINDOW_SECONDS. */
  dvrWindow: number | null;
  /** SRT ingest (SRT_PORTS): the stream's listener port and the passphrase callers need. */
  srtPort: number | null;
  srtPassphrase: string | null;
  /** When the owner last asked for the srtUrl or a caller last published through it (ms): the listener is armed while recent. */
  srtUsedAt?: number | null;
  /** Pull ingest: the source onair reads while the stream is enabled; null for a pushed stream. */
  pull: PullConfig | null;
  /** When start-pull last asked the pull to start now (ms): the pull ingest acts on a change. */
  pullRequestedAt: number | null;
}

export type RecordingStatus = "waiting" | "ready" | "failed" | "deleted" | "none";

export interface SessionRecord extends SegmentCounters {
  seq: number;
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
  recordingStatus: RecordingStatus | null;
  recordingError: string | null;
  /** Why the live session ended (LiveSession's describeEnd); null while live. */
  endReason: string | null;
  /** The node that ran it (null: a run from before nodes were recorded). */
  nodeId: string | null;
  /** How its publisher reached onair. */
  protocol: IngestProtocol;
}

export interface TargetRecord {
  seq: number;
  id: string;
  userId: string;
  name: string;
  url: string;
  disabled: boolean;
  /** rtmps: verify the destination's certificate (the default); false skips it. */
  tlsVerify: boolean;
  createdAt: number;
}

/** A stream's reference to a multistream target: which rendition goes there. */
export interface TargetRef {
  id: string;
  profile: string;
  videoOnly: boolean;
}

export interface WebhookFailure {
  timestamp: number;
  error: string;
  statusCode?: number;
  response?: string;
}

export interface WebhookRecord {
  seq: number;
  id: string;
  userId: string;
  name: string;
  url: string;
  events: string[];
  sharedSecret: string | null;
  streamId: string | null;
  createdAt: number;
  lastTriggeredAt: number | null;
  lastFailure: WebhookFailure | null;
}

/** One page of a list, newest first; `nextSeq` is set only when more items exist. */
export interface Page<T> {
  items: T[];
  nextSeq: number | null;
}
