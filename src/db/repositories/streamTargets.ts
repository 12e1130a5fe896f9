import { statementCache, type Db } from "../connection";
import type { TargetRef } from "../types";

interface Row {
  target_id: string;
  profile: string;
  video_only: number;
}

/** A stream's multistream references (DESIGN.md: `multistream.targets[]`). */
export class StreamTargetsRepository {
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(private readonly db: Db) {
    this.sql = statementCache(db);
  }

  listForStream(streamId: string): TargetRef[] {
    const rows = this
      .sql("SELECT target_id, profile, video_only FROM stream_targets WHERE stream_id = ? ORDER BY position")
      .all(streamId) as Row[];
    return rows.map((r) => ({ id: r.target_id, profile: r.profile, videoOnly: r.video_only === 1 }));
  }

  /** Replaces the whole list, as `multistream` on create and PATCH describes it whole. */
  replaceForStream(streamId: string, refs: TargetRef[]): void {
    this.db.transaction(() => {
      this.sql("DELETE FROM stream_targets WHERE stream_id = ?").run(streamId);
      const insert = this.sql(
        "INSERT INTO stream_targets (stream_id, position, target_id, profile, video_only) VALUES (?, ?, ?, ?, ?)",
      );
      refs.forEach((r, i) => insert.run(streamId, i, r.id, r.profile, r.videoOnly ? 1 : 0));
    })();
  }

  /** Parent streams (not deleted) that reference the target: what blocks its deletion. */
  streamsReferencing(targetId: string): { id: string; name: string }[] {
    return this
      .sql(
        `SELECT DISTINCT s.id, s.name FROM stream_targets st JOIN streams s ON s.id = st.stream_id
         WHERE st.target_id = ? AND s.deleted_at IS NULL ORDER BY s.seq`,
      )
      .all(targetId) as { id: string; name: string }[];
  }
}
