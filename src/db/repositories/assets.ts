import type { Sql } from "../sql";
import { newId, newPlaybackId, orderedNow, secretsEqual, sha256Hex } from "../ids";
import type { Page } from "../types";
import { selectPage, type PageRequest } from "./page";

/** Livepeer's asset phases that onair's clips go through. */
export type AssetPhase = "waiting" | "processing" | "ready" | "failed";

/** What ffprobe-free inspection of the clip's init segment tells (Livepeer's `videoSpec`). */
export interface AssetVideoSpec {
  format: string;
  duration?: number;
  bitrate?: number;
  tracks: { type: "video" | "audio"; codec: string; width?: number; height?: number; channels?: number; sampleRate?: number }[];
}

export interface AssetRecord {
  seq: number;
  id: string;
  userId: string;
  /** The asset's own playback id (its HLS and MP4 URLs), unlike `sourcePlaybackId`. */
  playbackId: string;
  name: string;
  streamId: string;
  sessionId: string;
  sourcePlaybackId: string;
  /** The range it covers, wall-clock ms: from the keyframe at or before the start asked for, to the end asked for (or the newest media). */
  clipStart: number;
  clipEnd: number;
  createdAt: number;
  phase: AssetPhase;
  updatedAt: number;
  progress: number | null;
  errorMessage: string | null;
  /** Bytes of the MP4 once ready; while it is made, the estimate its user's clip budget counts (MAX_CLIP_MB_PER_USER). */
  size: number | null;
  /** seconds */
  duration: number | null;
  videoSpec: AssetVideoSpec | null;
}

interface Row {
  seq: number;
  id: string;
  user_id: string;
  playback_id: string;
  name: string;
  stream_id: string;
  session_id: string;
  source_playback_id: string;
  clip_start: number | string;
  clip_end: number | string;
  created_at: number | string;
  phase: AssetPhase;
  updated_at: number | string;
  progress: number | null;
  error_message: string | null;
  size: number | string | null;
  duration: number | null;
  video_spec: string | null;
}

// PostgreSQL's BIGINT comes back as a string from node-postgres.
const int = (v: number | string) => Number(v);

const toAsset = (r: Row): AssetRecord => ({
  seq: int(r.seq),
  id: r.id,
  userId: r.user_id,
  playbackId: r.playback_id,
  name: r.name,
  streamId: r.stream_id,
  sessionId: r.session_id,
  sourcePlaybackId: r.source_playback_id,
  clipStart: int(r.clip_start),
  clipEnd: int(r.clip_end),
  createdAt: int(r.created_at),
  phase: r.phase,
  updatedAt: int(r.updated_at),
  progress: r.progress === null ? null : Number(r.progress),
  errorMessage: r.error_message,
  size: r.size === null ? null : int(r.size),
  duration: r.duration === null ? null : Number(r.duration),
  videoSpec: r.video_spec ? (JSON.parse(r.video_spec) as AssetVideoSpec) : null,
});

export type NewAsset = Pick<AssetRecord, "userId" | "name" | "streamId" | "sessionId" | "sourcePlaybackId" | "clipStart" | "clipEnd"> & {
  /** Bytes the clip is expected to take, counted until its real size is known. */
  estimatedSize?: number;
};

/** The assets table (clips). Not part of the store's repositories: built over any Sql handle. */
export class AssetsRepository {
  constructor(private readonly q: Sql) {}

  async create(a: NewAsset): Promise<AssetRecord> {
    const id = newId();
    const now = orderedNow();
    const playbackId = newPlaybackId();
    await this.q.run(
      `INSERT INTO assets (id, user_id, playback_id, playback_id_hash, name, stream_id, session_id, source_playback_id, clip_start, clip_end, created_at, phase, updated_at, size)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'waiting', ?, ?)`,
      [id, a.userId, playbackId, sha256Hex(playbackId), a.name, a.streamId, a.sessionId, a.sourcePlaybackId, a.clipStart, a.clipEnd, now, now, a.estimatedSize ?? null],
    );
    return (await this.get(id))!;
  }

  async get(id: string): Promise<AssetRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM assets WHERE id = ?", [id]);
    return row && toAsset(row);
  }

  async getOwned(userId: string, id: string): Promise<AssetRecord | undefined> {
    const a = await this.get(id);
    return a && a.userId === userId ? a : undefined;
  }

  async getByPlaybackId(playbackId: string): Promise<AssetRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM assets WHERE playback_id_hash = ?", [sha256Hex(playbackId)]);
    return row && secretsEqual(row.playback_id, playbackId) ? toAsset(row) : undefined;
  }

  async list(userId: string, page: PageRequest): Promise<Page<AssetRecord>> {
    return selectPage(this.q, "assets", ["user_id = ?"], [userId], page, toAsset);
  }

  async listForStream(streamId: string, page: PageRequest): Promise<Page<AssetRecord>> {
    return selectPage(this.q, "assets", ["stream_id = ?"], [streamId], page, toAsset);
  }

  async listForSession(sessionId: string, page: PageRequest): Promise<Page<AssetRecord>> {
    return selectPage(this.q, "assets", ["session_id = ?"], [sessionId], page, toAsset);
  }

  /** Work goes on: `progress` 0..1. A ready or failed asset stays as it is. */
  async setProcessing(id: string, progress: number): Promise<void> {
    await this.q.run("UPDATE assets SET phase = 'processing', progress = ?, updated_at = ? WHERE id = ? AND phase IN ('waiting', 'processing')", [
      progress,
      Date.now(),
      id,
    ]);
  }

  async setReady(id: string, done: { size: number; duration: number; videoSpec: AssetVideoSpec }): Promise<void> {
    await this.q.run("UPDATE assets SET phase = 'ready', progress = NULL, error_message = NULL, size = ?, duration = ?, video_spec = ?, updated_at = ? WHERE id = ?", [
      done.size,
      done.duration,
      JSON.stringify(done.videoSpec),
      Date.now(),
      id,
    ]);
  }

  async setFailed(id: string, errorMessage: string): Promise<void> {
    // A failed clip keeps no files: it no longer counts against its user's bytes.
    await this.q.run("UPDATE assets SET phase = 'failed', progress = NULL, error_message = ?, size = NULL, updated_at = ? WHERE id = ?", [errorMessage, Date.now(), id]);
  }

  /** A user's assets and the bytes they hold (estimates for those being made), for the per-user caps. */
  async usage(userId: string): Promise<{ count: number; bytes: number }> {
    const row = await this.q.get<{ n: number | string; bytes: number | string | null }>("SELECT COUNT(*) AS n, SUM(size) AS bytes FROM assets WHERE user_id = ?", [userId]);
    return { count: Number(row?.n ?? 0), bytes: Number(row?.bytes ?? 0) };
  }

  /** A clip of this user being made of exactly this range: asked again, it is answered with that one. */
  async findPending(userId: string, sessionId: string, clipStart: number, clipEnd: number): Promise<AssetRecord | undefined> {
    const row = await this.q.get<Row>(
      "SELECT * FROM assets WHERE user_id = ? AND session_id = ? AND clip_start = ? AND clip_end = ? AND phase IN ('waiting', 'processing') ORDER BY seq LIMIT 1",
      [userId, sessionId, clipStart, clipEnd],
    );
    return row && toAsset(row);
  }

  /** Assets a job must still exist for (JobQueue.expect). */
  async listUnfinished(limit: number): Promise<{ id: string; userId: string }[]> {
    const rows = await this.q.all<{ id: string; user_id: string }>("SELECT id, user_id FROM assets WHERE phase IN ('waiting', 'processing') ORDER BY seq LIMIT ?", [limit]);
    return rows.map((r) => ({ id: r.id, userId: r.user_id }));
  }

  async delete(id: string): Promise<void> {
    await this.q.run("DELETE FROM assets WHERE id = ?", [id]);
  }
}
