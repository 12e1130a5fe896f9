import type { Db } from "../connection";
import type { TargetRef } from "../types";

interface Row {
  target_id: string;
  profile: string;
  video_only: number;
}

/** A stream's multistream references (DESIGN.md: `multistream.targets[]`). */
export class StreamTargetsRepository {
  constructor(private readonly db: Db) {}

  listForStream(streamId: string): TargetRef[] {
    const rows = this.db
      .prepare("SELECT target_id, profile, video_only FROM stream_targets WHERE stream_id = ? ORDER BY position")
      .all(streamId) as Row[];
    return rows.map((r) => ({ id: r.target_id, profile: r.profile, videoOnly: r.video_only === 1 }));
  }

  /** Replaces the whole list, as `multistream` on create and PATCH describes it whole. */
  replaceForStream(streamId: string, refs: TargetRef[]): void {
    this.db.transaction(() => {
      this.db.prepare("DELETE FROM stream_targets WHERE stream_id = ?").run(streamId);
      const insert = this.db.prepare(
        "INSERT INTO stream_targets (stream_id, position, target_id, profile, video_only) VALUES (?, ?, ?, ?, ?)",
      );
      refs.forEach((r, i) => insert.run(streamId, i, r.id, r.profile, r.videoOnly ? 1 : 0));
    })();
  }

  /** Parent streams (not deleted) that reference the target: what blocks its deletion. */
  streamsReferencing(targetId: string): { id: string; name: string }[] {
    return this.db
      .prepare(
        `SELECT DISTINCT s.id, s.name FROM stream_targets st JOIN streams s ON s.id = st.stream_id
         WHERE st.target_id = ? AND s.deleted_at IS NULL ORDER BY s.seq`,
      )
      .all(targetId) as { id: string; name: string }[];
  }
}
