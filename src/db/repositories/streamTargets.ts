import type { Sql } from "../sql";
import type { TargetRef } from "../types";

interface Row {
  target_id: string;
  profile: string;
  video_only: number;
}

/** A stream's multistream references (docs/architecture.md#multistream-references: `multistream.targets[]`). */
export class StreamTargetsRepository {
  constructor(private readonly q: Sql) {}

  async listForStream(streamId: string): Promise<TargetRef[]> {
    const rows = await this.q.all<Row>("SELECT target_id, profile, video_only FROM stream_targets WHERE stream_id = ? ORDER BY position", [streamId]);
    return rows.map((r) => ({ id: r.target_id, profile: r.profile, videoOnly: r.video_only === 1 }));
  }

  /** Replaces the whole list, as `multistream` on create and PATCH describes it whole. */
  async replaceForStream(streamId: string, refs: TargetRef[]): Promise<void> {
    await this.q.transaction(async (q) => {
      await q.run("DELETE FROM stream_targets WHERE stream_id = ?", [streamId]);
      for (const [i, r] of refs.entries())
        await q.run("INSERT INTO stream_targets (stream_id, position, target_id, profile, video_only) VALUES (?, ?, ?, ?, ?)", [
          streamId,
          i,
          r.id,
          r.profile,
          r.videoOnly ? 1 : 0,
        ]);
    });
  }

  /** Parent streams (not deleted) that reference the target: what blocks its deletion. */
  async streamsReferencing(targetId: string): Promise<{ id: string; name: string }[]> {
    // DISTINCT with ORDER BY: PostgreSQL wants the sort key selected.
    const rows = await this.q.all<{ id: string; name: string; seq: number }>(
      `SELECT DISTINCT s.id, s.name, s.seq FROM stream_targets st JOIN streams s ON s.id = st.stream_id
       WHERE st.target_id = ? AND s.deleted_at IS NULL ORDER BY s.seq`,
      [targetId],
    );
    return rows.map((r) => ({ id: r.id, name: r.name }));
  }
}
