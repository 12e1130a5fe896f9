import type { Sql } from "../sql";
import { countersOf, type CounterColumns } from "./counters";
import { newId, newPlaybackId, newSrtPassphrase, newStreamKey, secretsEqual, sha256Hex } from "../ids";
import type { Profile, PullConfig } from "../../shapes";
import type { Page, PlaybackPolicy, StreamRecord } from "../types";
import { selectPage, type PageRequest } from "./page";

interface Row extends CounterColumns {
  seq: number;
  id: string;
  user_id: string;
  parent_id: string | null;
  name: string;
  stream_key: string | null;
  playback_id: string | null;
  created_at: number;
  is_active: number;
  last_seen: number;
  record: number;
  suspended: number;
  profiles: string;
  playback_policy: string | null;
  last_terminated_at: number | null;
  deleted_at: number | null;
  reconnect_window: number | null;
  dvr_window: number | null;
  srt_port: number | null;
  srt_passphrase: string | null;
  srt_used_at?: number | string | null;
  pull?: string | null;
  pull_requested_at?: number | null;
}

export function toStreamRecord(r: Row): StreamRecord {
  return {
    seq: r.seq,
    id: r.id,
    userId: r.user_id,
    parentId: r.parent_id,
    name: r.name,
    streamKey: r.stream_key,
    playbackId: r.playback_id,
    createdAt: r.created_at,
    isActive: r.is_active === 1,
    lastSeen: r.last_seen,
    record: r.record === 1,
    suspended: r.suspended === 1,
    profiles: JSON.parse(r.profiles) as Profile[],
    playbackPolicy: r.playback_policy ? (JSON.parse(r.playback_policy) as PlaybackPolicy) : null,
    ...countersOf(r),
    lastTerminatedAt: r.last_terminated_at,
    deletedAt: r.deleted_at,
    reconnectWindow: r.reconnect_window,
    dvrWindow: r.dvr_window,
    srtPort: r.srt_port ?? null,
    srtPassphrase: r.srt_passphrase ?? null,
    // A PostgreSQL BIGINT may come as text.
    srtUsedAt: r.srt_used_at === null || r.srt_used_at === undefined ? null : Number(r.srt_used_at),
    pull: r.pull ? (JSON.parse(r.pull) as PullConfig) : null,
    pullRequestedAt: r.pull_requested_at ?? null,
  };
}

export interface NewStream {
  userId: string;
  name: string;
  profiles: Profile[];
  record: boolean;
  playbackPolicy: PlaybackPolicy | null;
  reconnectWindow?: number | null;
  dvrWindow?: number | null;
  pull?: PullConfig | null;
}

/** Fields a user may change on a parent stream (PATCH /stream/{id}). */
export interface StreamChanges {
  name?: string;
  profiles?: Profile[];
  record?: boolean;
  suspended?: boolean;
  playbackPolicy?: PlaybackPolicy | null;
  reconnectWindow?: number | null;
  dvrWindow?: number | null;
  /** null: no longer pulled. */
  pull?: PullConfig | null;
}

export interface StreamFilters {
  isActive?: boolean;
  record?: boolean;
  suspended?: boolean;
  /** Case-insensitive substring of the name. */
  name?: string;
  parentId?: string;
}

/** Why a stream has no SRT port: pulled, its owner's share (SRT_PORTS_PER_USER) is used, SRT_PORTS is used up, or it is gone. */
export type SrtPortRefusal = "pulled" | "share" | "range" | "gone";

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => "\\" + c);

export class StreamsRepository {
  constructor(private readonly q: Sql) {}

  async create(s: NewStream): Promise<StreamRecord> {
    const id = newId();
    const streamKey = newStreamKey();
    const playbackId = newPlaybackId();
    await this.q.run(
      `INSERT INTO streams (id, user_id, name, stream_key, stream_key_hash, playback_id, playback_id_hash, created_at, record, profiles, playback_policy, reconnect_window, dvr_window, pull)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        s.userId,
        s.name,
        streamKey,
        sha256Hex(streamKey),
        playbackId,
        sha256Hex(playbackId),
        Date.now(),
        s.record ? 1 : 0,
        JSON.stringify(s.profiles),
        s.playbackPolicy ? JSON.stringify(s.playbackPolicy) : null,
        s.reconnectWindow ?? null,
        s.dvrWindow ?? null,
        s.pull ? JSON.stringify(s.pull) : null,
      ],
    );
    return (await this.get(id))!;
  }

  /**
   * Gives a parent stream the lowest free port of `range` for its SRT listener, and a passphrase,
   * unless it has one (its use is then noted, as for touchSrt); returns its port, or why it has
   * none: a pulled stream takes no SRT, a user holds at most `perUser` ports, the range may be
   * used up. Callers on PostgreSQL hold the `srt-ports` lock, so two streams never pick the same
   * port at once.
   */
  async assignSrtPort(streamId: string, range: { first: number; last: number }, perUser: number, at = Date.now()): Promise<{ port: number } | { refused: SrtPortRefusal }> {
    const current = await this.q.get<{ user_id: string; srt_port: number | null; pull: string | null }>(
      "SELECT user_id, srt_port, pull FROM streams WHERE id = ? AND parent_id IS NULL AND deleted_at IS NULL",
      [streamId],
    );
    if (!current) return { refused: "gone" };
    if (current.pull !== null) return { refused: "pulled" };
    if (current.srt_port !== null) {
      await this.touchSrt(streamId, at);
      return { port: current.srt_port };
    }
    if ((await this.srtPortsHeld(current.user_id)) >= perUser) return { refused: "share" };
    const used = new Set((await this.q.all<{ srt_port: number }>("SELECT srt_port FROM streams WHERE srt_port IS NOT NULL")).map((r) => r.srt_port));
    let port = range.first;
    while (port <= range.last && used.has(port)) port++;
    if (port > range.last) return { refused: "range" };
    await this.q.run("UPDATE streams SET srt_port = ?, srt_passphrase = ?, srt_used_at = ? WHERE id = ? AND srt_port IS NULL", [port, newSrtPassphrase(), at, streamId]);
    return { port };
  }

  /** How many SRT ports the user's streams hold (SRT_PORTS_PER_USER). */
  async srtPortsHeld(userId: string): Promise<number> {
    const row = await this.q.get<{ n: number | string }>("SELECT COUNT(*) AS n FROM streams WHERE user_id = ? AND srt_port IS NOT NULL AND deleted_at IS NULL", [userId]);
    return Number(row?.n ?? 0);
  }

  /** The stream's SRT port was asked for or used at `at`: its listener stays armed (a no-op without a port). */
  async touchSrt(streamId: string, at = Date.now()): Promise<void> {
    await this.q.run("UPDATE streams SET srt_used_at = ? WHERE id = ? AND srt_port IS NOT NULL AND (srt_used_at IS NULL OR srt_used_at < ?)", [at, streamId, at]);
  }

  /** A stream that has not been deleted, parent or child. */
  async get(id: string): Promise<StreamRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM streams WHERE id = ? AND deleted_at IS NULL", [id]);
    return row && toStreamRecord(row);
  }

  /** The caller's stream, or undefined for a missing one and for another user's alike. */
  async getOwned(userId: string, id: string): Promise<StreamRecord | undefined> {
    const s = await this.get(id);
    return s && s.userId === userId ? s : undefined;
  }

  /** Found by hash and compared in constant time (migration 003). */
  async getByPlaybackId(playbackId: string): Promise<StreamRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM streams WHERE playback_id_hash = ? AND deleted_at IS NULL AND parent_id IS NULL", [
      sha256Hex(playbackId),
    ]);
    return row?.playback_id && secretsEqual(row.playback_id, playbackId) ? toStreamRecord(row) : undefined;
  }

  /** Found by hash and compared in constant time (migration 003). */
  async getByStreamKey(streamKey: string): Promise<StreamRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM streams WHERE stream_key_hash = ? AND deleted_at IS NULL AND parent_id IS NULL", [
      sha256Hex(streamKey),
    ]);
    return row?.stream_key && secretsEqual(row.stream_key, streamKey) ? toStreamRecord(row) : undefined;
  }

  /**
   * Every parent stream a publish may name (not deleted, with a key): what the ingest's
   * in-memory key index loads.
   */
  async listPublishable(): Promise<StreamRecord[]> {
    return (await this.q.all<Row>("SELECT * FROM streams WHERE parent_id IS NULL AND deleted_at IS NULL AND stream_key IS NOT NULL")).map(toStreamRecord);
  }

  async list(userId: string, opts: { streamsOnly: boolean; filters: StreamFilters }, page: PageRequest): Promise<Page<StreamRecord>> {
    const where = ["user_id = ?", "deleted_at IS NULL"];
    const params: unknown[] = [userId];
    const f = opts.filters;
    if (opts.streamsOnly) where.push("parent_id IS NULL");
    for (const [key, column] of [
      ["isActive", "is_active"],
      ["record", "record"],
      ["suspended", "suspended"],
    ] as const) {
      const value = f[key];
      if (value !== undefined) {
        where.push(`${column} = ?`);
        params.push(value ? 1 : 0);
      }
    }
    if (f.name !== undefined) {
      // lower() on both sides: SQLite's LIKE ignores ASCII case, PostgreSQL's does not.
      where.push("lower(name) LIKE lower(?) ESCAPE '\\'");
      params.push(`%${escapeLike(f.name)}%`);
    }
    if (f.parentId !== undefined) {
      where.push("parent_id = ?");
      params.push(f.parentId);
    }
    return selectPage(this.q, "streams", where, params, page, toStreamRecord);
  }

  /** How many parent streams the user has, deleted ones aside (the per-user cap). */
  async countOwned(userId: string): Promise<number> {
    return (await this.q.get<{ n: number }>("SELECT COUNT(*) AS n FROM streams WHERE user_id = ? AND parent_id IS NULL AND deleted_at IS NULL", [userId]))!.n;
  }

  async update(id: string, c: StreamChanges): Promise<void> {
    const sets: string[] = [];
    const params: unknown[] = [];
    if (c.name !== undefined) sets.push("name = ?"), params.push(c.name);
    if (c.profiles !== undefined) sets.push("profiles = ?"), params.push(JSON.stringify(c.profiles));
    if (c.record !== undefined) sets.push("record = ?"), params.push(c.record ? 1 : 0);
    if (c.suspended !== undefined) sets.push("suspended = ?"), params.push(c.suspended ? 1 : 0);
    if (c.reconnectWindow !== undefined) sets.push("reconnect_window = ?"), params.push(c.reconnectWindow);
    if (c.dvrWindow !== undefined) sets.push("dvr_window = ?"), params.push(c.dvrWindow);
    if (c.playbackPolicy !== undefined) {
      sets.push("playback_policy = ?");
      params.push(c.playbackPolicy ? JSON.stringify(c.playbackPolicy) : null);
    }
    if (c.pull !== undefined) sets.push("pull = ?"), params.push(c.pull ? JSON.stringify(c.pull) : null);
    // A pulled stream takes no SRT: its port goes back to the pool.
    if (c.pull) sets.push("srt_port = NULL", "srt_passphrase = NULL");
    if (sets.length === 0) return;
    await this.q.run(`UPDATE streams SET ${sets.join(", ")} WHERE id = ?`, [...params, id]);
  }

  /** start-pull: the pull ingest of the node that pulls the stream starts it now (a changed value is its cue). */
  async requestPull(id: string, at = Date.now()): Promise<void> {
    await this.q.run("UPDATE streams SET pull_requested_at = CASE WHEN pull_requested_at >= ? THEN pull_requested_at + 1 ELSE ? END WHERE id = ?", [at, at, id]);
  }

  /**
   * Deletes a parent stream and its child stream objects (soft: rows stay for sessions and
   * recordings that refer to them, but nothing reads them as streams again). The stream key
   * stays reserved, so a deleted stream's key can never be reused by a publisher.
   */
  async softDelete(id: string, at = Date.now()): Promise<void> {
    await this.q.transaction(async (q) => {
      // Its SRT port goes back to the pool.
      await q.run("UPDATE streams SET deleted_at = ?, srt_port = NULL WHERE (id = ? OR parent_id = ?) AND deleted_at IS NULL", [at, id, id]);
      await q.run("DELETE FROM stream_targets WHERE stream_id = ?", [id]);
    });
  }

  /**
   * isActive of a parent and its child stream object together (docs/api.md#spec-31-stream-activity). Only the session
   * manager calls this: it alone knows when the playback URL works.
   */
  async setActive(ids: string[], active: boolean, at = Date.now()): Promise<void> {
    await this.q.transaction(async (q) => {
      // The lock order (SessionsRepository): parent rows before their children's, whatever
      // order `ids` come in. PostgreSQL locks a locking SELECT's rows in its ORDER BY's order.
      if (q.dialect === "postgres" && ids.length > 1)
        await q.run(`SELECT 1 FROM streams WHERE id IN (${ids.map(() => "?").join(", ")}) ORDER BY parent_id IS NOT NULL, id FOR NO KEY UPDATE`, ids);
      for (const id of ids)
        await q.run("UPDATE streams SET is_active = ?, last_seen = CASE WHEN last_seen > ? THEN last_seen ELSE ? END WHERE id = ?", [
          active ? 1 : 0,
          at,
          at,
          id,
        ]);
    });
  }

  /** A parent stream goes idle unless a node holds its lease (a takeover whose session is live or opening). */
  async setIdleUnlessHeld(id: string): Promise<void> {
    await this.q.run("UPDATE streams SET is_active = 0 WHERE id = ? AND live_node IS NULL", [id]);
  }

  /** Streams marked active: after a crash, these are the ones to set idle. */
  async listActive(): Promise<StreamRecord[]> {
    return (await this.q.all<Row>("SELECT * FROM streams WHERE is_active = 1")).map(toStreamRecord);
  }
}
