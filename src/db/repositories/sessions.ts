import { statementCache, type Db } from "../connection";
import { countersOf, type CounterColumns } from "./counters";
import { newId } from "../ids";
import type { Profile, SegmentCounters } from "../../shapes";
import type { Page, RecordingStatus, SessionRecord, StreamRecord } from "../types";
import { selectPage, type PageRequest } from "./page";

interface Row extends CounterColumns {
  seq: number;
  id: string;
  user_id: string;
  parent_id: string;
  name: string;
  playback_id: string | null;
  created_at: number;
  ended_at: number | null;
  last_seen: number;
  record: number;
  profiles: string;
  recording_status: RecordingStatus | null;
  recording_error: string | null;
  end_reason: string | null;
}

const toSession = (r: Row): SessionRecord => ({
  seq: r.seq,
  id: r.id,
  userId: r.user_id,
  parentId: r.parent_id,
  name: r.name,
  playbackId: r.playback_id,
  createdAt: r.created_at,
  endedAt: r.ended_at,
  lastSeen: r.last_seen,
  record: r.record === 1,
  profiles: JSON.parse(r.profiles) as Profile[],
  ...countersOf(r),
  recordingStatus: r.recording_status,
  recordingError: r.recording_error,
  endReason: r.end_reason,
});

export class SessionsRepository {
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(private readonly db: Db) {
    this.sql = statementCache(db);
  }

  /**
   * Opens a session for a publish on `parent`: the session row and its historic child stream
   * object (same id, parentId set) are written together. `record` and `profiles` are copied
   * from the parent now: later changes to the parent apply to later sessions only (spec 3.2).
   */
  start(parent: StreamRecord, at = Date.now()): SessionRecord {
    if (parent.parentId !== null) throw new Error(`stream ${parent.id} is a child stream; sessions start on parents`);
    const id = newId();
    const profiles = JSON.stringify(parent.profiles);
    this.db.transaction(() => {
      this
        .sql(
          `INSERT INTO sessions (id, user_id, parent_id, name, playback_id, created_at, last_seen, record, profiles)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(id, parent.userId, parent.id, parent.name, parent.playbackId, at, at, parent.record ? 1 : 0, profiles);
      this
        .sql(
          `INSERT INTO streams (id, user_id, parent_id, name, created_at, last_seen, record, profiles)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(id, parent.userId, parent.id, parent.name, at, at, parent.record ? 1 : 0, profiles);
    })();
    return this.get(id)!;
  }

  /**
   * Adds a pipeline's progress to the session, its child stream object and the parent
   * stream alike, and moves their lastSeen forward.
   */
  addProgress(sessionId: string, delta: Partial<SegmentCounters>, at = Date.now()): void {
    const s = this.get(sessionId);
    if (!s) return;
    const d = {
      ss: delta.sourceSegments ?? 0,
      ts: delta.transcodedSegments ?? 0,
      ssd: delta.sourceSegmentsDuration ?? 0,
      tsd: delta.transcodedSegmentsDuration ?? 0,
      sb: delta.sourceBytes ?? 0,
      tb: delta.transcodedBytes ?? 0,
      at,
    };
    const set = `source_segments = source_segments + @ss, transcoded_segments = transcoded_segments + @ts,
      source_segments_duration = source_segments_duration + @ssd,
      transcoded_segments_duration = transcoded_segments_duration + @tsd,
      source_bytes = source_bytes + @sb, transcoded_bytes = transcoded_bytes + @tb, last_seen = @at`;
    this.db.transaction(() => {
      this.sql(`UPDATE sessions SET ${set} WHERE id = @id`).run({ ...d, id: sessionId });
      this.sql(`UPDATE streams SET ${set} WHERE id IN (@id, @parent)`).run({ ...d, id: sessionId, parent: s.parentId });
    })();
  }

  /** Closes a session, saying why; ending one that already ended changes nothing. */
  end(sessionId: string, at = Date.now(), reason: string | null = null): boolean {
    return this.db.transaction(() => {
      const r = this.sql("UPDATE sessions SET ended_at = ?, last_seen = MAX(last_seen, ?), end_reason = ? WHERE id = ? AND ended_at IS NULL").run(at, at, reason, sessionId);
      this.sql("UPDATE streams SET is_active = 0 WHERE id = ?").run(sessionId);
      return r.changes === 1;
    })();
  }

  setRecordingStatus(sessionId: string, status: RecordingStatus, error: string | null = null): void {
    this.sql("UPDATE sessions SET recording_status = ?, recording_error = ? WHERE id = ?").run(status, error, sessionId);
  }

  get(id: string): SessionRecord | undefined {
    const row = this.sql("SELECT * FROM sessions WHERE id = ?").get(id) as Row | undefined;
    return row && toSession(row);
  }

  getOwned(userId: string, id: string): SessionRecord | undefined {
    const s = this.get(id);
    return s && s.userId === userId ? s : undefined;
  }

  /** Recorded sessions that ended before `cutoff` and whose recording still exists. */
  listRecordingsEndedBefore(cutoff: number): SessionRecord[] {
    return (
      this.sql("SELECT * FROM sessions WHERE record = 1 AND ended_at < ? AND (recording_status IS NULL OR recording_status != 'deleted')").all(
        cutoff,
      ) as Row[]
    ).map(toSession);
  }

  /**
   * Recorded sessions that ended without their recording being handed to finalize (a crash, or
   * a full disk at their end): at start, these get finalized.
   */
  /** Recorded sessions waiting for finalize, oldest first: the finalize jobs that must exist. */
  listWaitingForFinalize(limit: number): { id: string; userId: string }[] {
    return this.sql("SELECT id, user_id AS userId FROM sessions WHERE recording_status = 'waiting' ORDER BY seq LIMIT ?").all(limit) as {
      id: string;
      userId: string;
    }[];
  }

  listUnfinalizedRecordings(): SessionRecord[] {
    return (this.sql("SELECT * FROM sessions WHERE record = 1 AND ended_at IS NOT NULL AND recording_status IS NULL").all() as Row[]).map(toSession);
  }

  /** Sessions still open (ended_at unset): after a crash, these are the ones to close. */
  listOpen(): SessionRecord[] {
    return (this.sql("SELECT * FROM sessions WHERE ended_at IS NULL").all() as Row[]).map(toSession);
  }

  list(userId: string, page: PageRequest): Page<SessionRecord> {
    return selectPage(this.sql, "sessions", ["user_id = ?"], [userId], page, toSession);
  }

  listForParent(parentId: string, opts: { recordedOnly: boolean }, page: PageRequest): Page<SessionRecord> {
    const where = ["parent_id = ?"];
    if (opts.recordedOnly) where.push("record = 1");
    return selectPage(this.sql, "sessions", where, [parentId], page, toSession);
  }
}
