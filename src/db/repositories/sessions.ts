import type { Sql } from "../sql";
import { countersOf, type CounterColumns } from "./counters";
import { newId } from "../ids";
import type { IngestProtocol, Profile, SegmentCounters } from "../../shapes";
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
  node_id: string | null;
  protocol: string;
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
  nodeId: r.node_id ?? null,
  protocol: r.protocol as IngestProtocol,
});

/**
 * Lock order. Writes to a live stream come at once from several places (segment counters,
 * going live or idle, the session's end), and on PostgreSQL each transaction locks the rows it
 * writes until it ends: two that lock the same rows in opposite orders deadlock, and one of them
 * is aborted. So every transaction writing more than one of them locks, in this order: the
 * parent stream row, then the child stream row, then the session row. addProgress and end here
 * and StreamsRepository.setActive enforce it; a caller joining them in one transaction (the
 * session end and setActive, an orphan's end) keeps it by calling them in that order or by
 * writing only rows these already locked. SQLite runs one writer at a time (BEGIN IMMEDIATE).
 */
export class SessionsRepository {
  constructor(private readonly q: Sql) {}

  /**
   * Opens a session for a publish on `parent`: the session row and its historic child stream
   * object (same id, parentId set) are written together. `record` and `profiles` are copied
   * from the parent now: later changes to the parent apply to later sessions only (docs/api.md#spec-32-recording-switch).
   */
  async start(parent: StreamRecord, at = Date.now(), nodeId: string | null = null, protocol: IngestProtocol = "rtmp"): Promise<SessionRecord> {
    if (parent.parentId !== null) throw new Error(`stream ${parent.id} is a child stream; sessions start on parents`);
    const id = newId();
    const profiles = JSON.stringify(parent.profiles);
    await this.q.transaction(async (q) => {
      await q.run(
        `INSERT INTO sessions (id, user_id, parent_id, name, playback_id, created_at, last_seen, record, profiles, node_id, protocol)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [id, parent.userId, parent.id, parent.name, parent.playbackId, at, at, parent.record ? 1 : 0, profiles, nodeId, protocol],
      );
      await q.run(
        `INSERT INTO streams (id, user_id, parent_id, name, created_at, last_seen, record, profiles)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        [id, parent.userId, parent.id, parent.name, at, at, parent.record ? 1 : 0, profiles],
      );
    });
    return (await this.get(id))!;
  }

  /**
   * Adds a pipeline's progress to the session, its child stream object and the parent
   * stream alike, and moves their lastSeen forward.
   */
  async addProgress(sessionId: string, delta: Partial<SegmentCounters>, at = Date.now()): Promise<void> {
    const d = [
      delta.sourceSegments ?? 0,
      delta.transcodedSegments ?? 0,
      delta.sourceSegmentsDuration ?? 0,
      delta.transcodedSegmentsDuration ?? 0,
      delta.sourceBytes ?? 0,
      delta.transcodedBytes ?? 0,
      at,
    ];
    const set = `source_segments = source_segments + ?, transcoded_segments = transcoded_segments + ?,
      source_segments_duration = source_segments_duration + ?,
      transcoded_segments_duration = transcoded_segments_duration + ?,
      source_bytes = source_bytes + ?, transcoded_bytes = transcoded_bytes + ?, last_seen = ?`;
    // In the lock order (above): parent, child, session, one row per statement (one UPDATE of
    // both streams locks them in whatever order the scan finds them). The parent is found in
    // the statement itself: as many round trips as reading the session first took, and an
    // unknown session changes nothing.
    await this.q.transaction(async (q) => {
      await q.run(`UPDATE streams SET ${set} WHERE id = (SELECT parent_id FROM sessions WHERE id = ?)`, [...d, sessionId]);
      await q.run(`UPDATE streams SET ${set} WHERE id = ?`, [...d, sessionId]);
      await q.run(`UPDATE sessions SET ${set} WHERE id = ?`, [...d, sessionId]);
    });
  }

  /** Closes a session, saying why; ending one that already ended changes nothing. */
  async end(sessionId: string, at = Date.now(), reason: string | null = null): Promise<boolean> {
    return this.q.transaction(async (q) => {
      // The lock order (above) starts at the parent, which the callers write next (setActive,
      // an orphan's idle): taken first here, as an UPDATE would take it (NO KEY: a session
      // starting on the stream still checks its reference to it meanwhile).
      if (q.dialect === "postgres") await q.run("SELECT 1 FROM streams WHERE id = (SELECT parent_id FROM sessions WHERE id = ?) FOR NO KEY UPDATE", [sessionId]);
      await q.run("UPDATE streams SET is_active = 0 WHERE id = ?", [sessionId]);
      const changed = await q.run(
        "UPDATE sessions SET ended_at = ?, last_seen = CASE WHEN last_seen > ? THEN last_seen ELSE ? END, end_reason = ? WHERE id = ? AND ended_at IS NULL",
        [at, at, at, reason, sessionId],
      );
      return changed === 1;
    });
  }

  /**
   * The first status of an ended session's recording (waiting for finalize, or failed), set once:
   * false if it has one already (another node handed it over), which is then not undone.
   */
  async settleRecording(sessionId: string, status: "waiting" | "failed", error: string | null = null): Promise<boolean> {
    return (await this.q.run("UPDATE sessions SET recording_status = ?, recording_error = ? WHERE id = ? AND recording_status IS NULL", [status, error, sessionId])) === 1;
  }

  async setRecordingStatus(sessionId: string, status: RecordingStatus, error: string | null = null): Promise<void> {
    await this.q.run("UPDATE sessions SET recording_status = ?, recording_error = ? WHERE id = ?", [status, error, sessionId]);
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM sessions WHERE id = ?", [id]);
    return row && toSession(row);
  }

  async getOwned(userId: string, id: string): Promise<SessionRecord | undefined> {
    const s = await this.get(id);
    return s && s.userId === userId ? s : undefined;
  }

  /** Recorded sessions that ended before `cutoff` and whose recording still exists. */
  async listRecordingsEndedBefore(cutoff: number): Promise<SessionRecord[]> {
    return (
      await this.q.all<Row>("SELECT * FROM sessions WHERE record = 1 AND ended_at < ? AND (recording_status IS NULL OR recording_status != 'deleted')", [
        cutoff,
      ])
    ).map(toSession);
  }

  /** Recorded sessions waiting for finalize, oldest first: the finalize jobs that must exist. */
  async listWaitingForFinalize(limit: number): Promise<{ id: string; userId: string }[]> {
    const rows = await this.q.all<{ id: string; user_id: string }>("SELECT id, user_id FROM sessions WHERE recording_status = 'waiting' ORDER BY seq LIMIT ?", [
      limit,
    ]);
    return rows.map((r) => ({ id: r.id, userId: r.user_id }));
  }

  /**
   * Recorded sessions that ended without their recording being handed to finalize (a crash, or
   * a full disk at their end): at start, these get finalized.
   */
  async listUnfinalizedRecordings(): Promise<SessionRecord[]> {
    return (await this.q.all<Row>("SELECT * FROM sessions WHERE record = 1 AND ended_at IS NOT NULL AND recording_status IS NULL")).map(toSession);
  }

  /** Sessions still open (ended_at unset): after a crash, these are the ones to close. */
  async listOpen(): Promise<SessionRecord[]> {
    return (await this.q.all<Row>("SELECT * FROM sessions WHERE ended_at IS NULL")).map(toSession);
  }

  /** Open sessions run by none of `aliveNodes` (nor by a node of no id, which only one-node runs leave). */
  async listOpenOrphans(aliveNodes: string[]): Promise<SessionRecord[]> {
    const alive = aliveNodes.length ? `AND node_id NOT IN (${aliveNodes.map(() => "?").join(", ")})` : "";
    return (await this.q.all<Row>(`SELECT * FROM sessions WHERE ended_at IS NULL AND node_id IS NOT NULL ${alive}`, aliveNodes)).map(toSession);
  }

  /** The stream's open sessions. */
  async listOpenForParent(parentId: string): Promise<SessionRecord[]> {
    return (await this.q.all<Row>("SELECT * FROM sessions WHERE parent_id = ? AND ended_at IS NULL", [parentId])).map(toSession);
  }

  async list(userId: string, page: PageRequest): Promise<Page<SessionRecord>> {
    return selectPage(this.q, "sessions", ["user_id = ?"], [userId], page, toSession);
  }

  async listForParent(parentId: string, opts: { recordedOnly: boolean }, page: PageRequest): Promise<Page<SessionRecord>> {
    const where = ["parent_id = ?"];
    if (opts.recordedOnly) where.push("record = 1");
    return selectPage(this.q, "sessions", where, [parentId], page, toSession);
  }
}
