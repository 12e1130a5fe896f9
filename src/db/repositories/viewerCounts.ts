import type { Sql } from "../sql";

/**
 * A playback id's viewers on a node, or summed over the nodes: all, and those over WebRTC.
 * The same shape as the counter's ViewerCount, declared again because src/playback imports
 * src/db and not the other way round.
 */
export interface ViewerCount {
  viewers: number;
  webrtc: number;
}

/**
 * Concurrent viewers by node: each node writes what it counts for the streams it packages
 * (one row per node and playback id), and readers sum the rows written recently, so a node
 * that died stops counting once its rows are no longer fresh.
 */
export class ViewerCountsRepository {
  constructor(private readonly q: Sql) {}

  /**
   * This node's counts now: `counts` replaces what the node wrote before (playback ids absent
   * from it, or counted 0 viewers, have no row any more).
   */
  async replaceForNode(nodeId: string, counts: ReadonlyMap<string, ViewerCount>, now: number): Promise<void> {
    await this.q.transaction(async (q) => {
      for (const [playbackId, { viewers, webrtc }] of counts) {
        if (viewers <= 0) continue;
        await q.run(
          `INSERT INTO viewer_counts (node_id, playback_id, count, webrtc_count, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (node_id, playback_id) DO UPDATE SET count = excluded.count, webrtc_count = excluded.webrtc_count, updated_at = excluded.updated_at`,
          [nodeId, playbackId, viewers, webrtc, now],
        );
      }
      await q.run("DELETE FROM viewer_counts WHERE node_id = ? AND updated_at <> ?", [nodeId, now]);
    });
  }

  /** A node stopping: its viewers are no longer counted anywhere. */
  async clearNode(nodeId: string): Promise<void> {
    await this.q.run("DELETE FROM viewer_counts WHERE node_id = ?", [nodeId]);
  }

  /**
   * Viewers of `userId`'s streams by playback id (all, and those over WebRTC), summed over the
   * nodes' rows written at or after `freshSince`; only `playbackId` when given. Streams without
   * viewers are absent.
   */
  async totalsForUser(userId: string, freshSince: number, playbackId?: string): Promise<Map<string, ViewerCount>> {
    const rows = await this.q.all<{ playback_id: string; n: number; webrtc: number }>(
      `SELECT v.playback_id AS playback_id, SUM(v.count) AS n, SUM(v.webrtc_count) AS webrtc FROM viewer_counts v
       JOIN streams s ON s.playback_id = v.playback_id
       WHERE s.user_id = ? AND s.parent_id IS NULL AND s.deleted_at IS NULL AND v.updated_at >= ?${playbackId !== undefined ? " AND v.playback_id = ?" : ""}
       GROUP BY v.playback_id`,
      playbackId !== undefined ? [userId, freshSince, playbackId] : [userId, freshSince],
    );
    return new Map(rows.map((r) => [r.playback_id, { viewers: Number(r.n), webrtc: Number(r.webrtc) }]));
  }

  /** Rows older than `before` (nodes that died without clearing theirs). */
  async deleteStale(before: number): Promise<number> {
    return this.q.run("DELETE FROM viewer_counts WHERE updated_at < ?", [before]);
  }
}
