import type { Logger } from "../log";
import type { PipelineInput } from "../media";
import type { Rendition } from "../shapes";

export interface WrittenSegment {
  rendition: Rendition;
  /** Absolute path of the segment file. */
  file: string;
  /** Its name in the playlist. */
  uri: string;
  /** seconds */
  duration: number;
  seq: number;
  bytes: number;
  /** Which pipeline run of the session wrote it: 0, then one more after each restart or reconnect. */
  run: number;
  /** Its init segment (fragmented MP4): the same file for a run's segments. */
  map: { uri: string; file: string };
  /** Wall-clock ms of its first sample: its EXT-X-PROGRAM-DATE-TIME. */
  programDateTime: number;
}

/** What other modules (multistream, recordings) need to know about a live session. */
export interface LiveSessionInfo {
  streamId: string;
  sessionId: string;
  userId: string;
  playbackId: string;
  /** `<DATA_DIR>/hls/<playbackId>`: rendition i's live playlist is `<hlsDir>/<i>/index.m3u8`. */
  hlsDir: string;
  renditions: Rendition[];
  /** How far back its live playlists reach (seconds; 0: no DVR), fixed for the session. */
  dvrSeconds: number;
  /**
   * The published stream (the source, as it arrives), written as FLV into a reader's pipe by
   * the local ingest: source-copy pushes read it on their stdin. FLV carries H.264 only: an
   * HEVC or AV1 publish's source pushes fail (the pipeline reads those as MP4 instead).
   */
  source: Omit<PipelineInput, "format">;
  /** The current publisher's video codec ("H.264", "HEVC", "AV1"), once known. */
  sourceCodec(): string | undefined;
  /** Whether the session is recorded (copied from its stream when it started). */
  record: boolean;
  /** Carries streamId and sessionId on every line. */
  log: Logger;
  /**
   * Another node took the stream's lease: the session stops here, and what observers would
   * write or raise about it (a recording's hand-off, multistream events) is not theirs to any more.
   */
  leaseLost(): boolean;
}

/**
 * Told about live sessions by the session manager: the way modules add work to a live
 * session (pushes to destinations, recordings) without the manager knowing them.
 * Methods must not throw; failures are theirs to log and report.
 */
export interface LiveSessionObserver {
  /**
   * The session's HLS plays (isActive just turned true): once per publisher of the session,
   * again after a reconnect inside the window.
   */
  sessionLive(info: LiveSessionInfo): void;
  /**
   * The publisher left and the session waits for a reconnect (isActive false; the session,
   * its recording and playlists stay open). sessionLive follows if it comes back.
   */
  sourceLost?(info: LiveSessionInfo): void;
  /**
   * The session has ended (isActive is false, or it never became live): stop what was started
   * for it. Called once for every session, live or not.
   */
  sessionEnded(info: LiveSessionInfo): void;
  /** A new segment of a rendition is complete on disk (listed in its live playlist). */
  segmentWritten?(info: LiveSessionInfo, segment: WrittenSegment): void;
  /** The stream's settings changed while live (e.g. its multistream targets). */
  streamChanged?(streamId: string): void;
}
