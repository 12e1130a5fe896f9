import fs from "node:fs";
import path from "node:path";
import { AssetsRepository, lockKey, type AssetRecord, type SessionRecord, type Sql, type Store, type StreamRecord } from "../db";
import type { NewJob } from "../queue";
import type { RecordingStore } from "../storage";
import { presentAsset, type AssetJson } from "./present";
import { capRefusal, CLIP_END_AHEAD_MS, clipEnd, cutBytesNeeded, estimateClipBytes, freeSpaceRefusal, newestMedia, type ClipCaps } from "./quota";
import { describeAvailable, resolveClipSource, type ClipSource, type SourcePaths } from "./sources";

export const CLIP_QUEUE = "asset-clip";

export interface ClipJob {
  assetId: string;
}

/** An asset's clip job: its id is the asset's, so an asset is made by one job. */
export const clipJob = (asset: Pick<AssetRecord, "id" | "userId">): NewJob<ClipJob> => ({ id: `clip-${asset.id}`, data: { assetId: asset.id }, owner: asset.userId });

/** Default MAX_CLIP_SECONDS: ten minutes, Livepeer's "last minutes of a stream", copied in seconds. */
export const DEFAULT_MAX_CLIP_SECONDS = 600;

/**
 * A clip request refused: `status` is the HTTP answer (the API maps it). 400: what the request
 * or the user's caps forbid; 503: this server has no room for it now (`retryAfterSeconds`).
 */
export class ClipRefused extends Error {
  constructor(
    readonly status: 400 | 404 | 503,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = "ClipRefused";
  }
}

export interface ClipRequest {
  playbackId: string;
  /** wall-clock ms */
  startTime: number;
  /** wall-clock ms; absent: the newest media there is */
  endTime?: number;
  name?: string;
  sessionId?: string;
}

export interface ClipServiceDeps extends SourcePaths {
  store: Store;
  publicUrl(): string;
  maxClipSeconds: number;
  /** MAX_ASSETS_PER_USER and MAX_CLIP_MB_PER_USER; unlimited when absent. */
  caps?: ClipCaps;
  /** STORAGE_MIN_FREE_MB in bytes: a cut must leave it free (0 when absent). */
  minFreeBytes?: number;
  /** `DATA_DIR/assets` */
  assetsDir: string;
  /** The assets' store: local disk, or the bucket under `assets/<id>/`. */
  assetObjects: RecordingStore;
  /** Enqueues the clip job inside the transaction `within`. */
  enqueue(job: NewJob<ClipJob>, within: Sql): Promise<void>;
}

/** POST /clip and the asset reads: what the API asks of src/assets. */
export class ClipService {
  constructor(private readonly deps: ClipServiceDeps) {}

  get assets(): AssetsRepository {
    return new AssetsRepository(this.deps.store.db);
  }

  present(a: AssetRecord): AssetJson {
    return presentAsset(a, this.deps.publicUrl());
  }

  /**
   * Checks the request against what exists and records the asset, `waiting`, with its job (one
   * transaction). Refusals: another user's (or no) playback id or session → 404; a range that
   * is too long or not wholly within the live window or the session's recording, or a user
   * past MAX_ASSETS_PER_USER or MAX_CLIP_MB_PER_USER → 400 saying what is; no room on this
   * disk for the cut → 503. The same range of the same session asked again while its clip is
   * being made answers that clip.
   */
  async create(userId: string, r: ClipRequest): Promise<{ asset: AssetJson; task: { id: string } }> {
    const { store } = this.deps;
    const stream = await store.streams.getByPlaybackId(r.playbackId);
    if (!stream || stream.userId !== userId || stream.parentId !== null) throw new ClipRefused(404, `playback id ${r.playbackId.slice(0, 64)} not found`);
    const session = await this.sessionOf(userId, stream, r.sessionId);
    const { source, endTime } = await this.locate(session, stream.playbackId!, r);
    // What it covers: from the keyframe it starts at (a segment's start) to its end.
    const clipStart = Math.round(source.plan.segments[0]!.programDateTime);
    const estimate = estimateClipBytes(source.plan.durationSeconds, segmentBytes(source), session);
    const room = freeSpaceRefusal(freeBytesAt(this.deps.assetsDir), cutBytesNeeded(estimate), this.deps.minFreeBytes ?? 0);
    if (room) throw new ClipRefused(503, room, 30);
    const asset = await store.transaction(async (tx) => {
      const assets = new AssetsRepository(tx.db);
      // One user's clips are counted one request at a time: two at once cannot both take the last place.
      await lockKey(tx.db, `assets/${userId}`);
      const pending = await assets.findPending(userId, session.id, clipStart, endTime);
      if (pending) return pending;
      const { caps } = this.deps;
      const over = caps && capRefusal(await assets.usage(userId), estimate, caps);
      if (over) throw new ClipRefused(400, over);
      const created = await assets.create({
        userId,
        name: r.name ?? `${stream.name} clip`,
        streamId: stream.id,
        sessionId: session.id,
        sourcePlaybackId: stream.playbackId!,
        clipStart,
        clipEnd: endTime,
        estimatedSize: estimate,
      });
      await this.deps.enqueue(clipJob(created), tx.db);
      return created;
    });
    return { asset: this.present(asset), task: { id: clipJob(asset).id } };
  }

  /**
   * Where the range asked for is, and its end: none asked, or asked as "up to now" (past the
   * newest media by at most CLIP_END_AHEAD_MS past now), is the newest media.
   */
  private async locate(session: SessionRecord, playbackId: string, r: ClipRequest): Promise<{ source: ClipSource; endTime: number }> {
    const maxMs = this.deps.maxClipSeconds * 1000;
    const tooLong = (end: number) =>
      new ClipRefused(400, `a clip is at most ${this.deps.maxClipSeconds} s long (MAX_CLIP_SECONDS); asked for ${((end - r.startTime) / 1000).toFixed(1)} s`);
    if (r.endTime !== undefined && r.endTime - r.startTime > maxMs) throw tooLong(r.endTime);
    let found = r.endTime !== undefined ? await resolveClipSource(this.deps, session, playbackId, r.startTime, r.endTime) : undefined;
    if (found?.ok) return { source: found.source, endTime: r.endTime! };
    // Not there as asked: what is there decides the end.
    const available = (found ?? (await resolveClipSource(this.deps, session, playbackId, r.startTime, Number.MAX_SAFE_INTEGER)));
    const held = available.ok ? [] : available.available;
    const now = Date.now();
    const endTime = clipEnd(r.startTime, r.endTime, newestMedia(held), now, maxMs);
    if (endTime === undefined) throw new ClipRefused(400, `startTime ${r.startTime} is not within what can be clipped: ${describeAvailable(held)}`);
    if (r.endTime !== undefined && endTime === r.endTime) {
      const ahead = r.endTime > now + CLIP_END_AHEAD_MS ? ` (endTime is ${((r.endTime - now) / 1000).toFixed(1)} s after now: at most ${CLIP_END_AHEAD_MS / 1000} s after now is read as "up to the newest media")` : "";
      throw new ClipRefused(400, `startTime ${r.startTime} to endTime ${r.endTime} is not within what can be clipped of session ${session.id}: ${describeAvailable(held)}${ahead}`);
    }
    if (endTime - r.startTime > maxMs) throw tooLong(endTime);
    found = await resolveClipSource(this.deps, session, playbackId, r.startTime, endTime);
    if (!found.ok) throw new ClipRefused(400, `startTime ${r.startTime} to endTime ${endTime} is not within what can be clipped of session ${session.id}: ${describeAvailable(found.available)}`);
    return { source: found.source, endTime };
  }

  /**
   * Deletes the asset, then its files. The row goes first: a clip job still running finds it
   * gone at its end and removes what it made (files deleted first could be put back by a job
   * finishing in between, and stay forever).
   */
  async delete(a: AssetRecord): Promise<void> {
    await this.assets.delete(a.id);
    await this.deps.assetObjects.delete(a.id, path.join(this.deps.assetsDir, a.id));
  }

  /** The session named, the stream's open one, or its latest: the clip's media is that session's. */
  private async sessionOf(userId: string, stream: StreamRecord, sessionId: string | undefined): Promise<SessionRecord> {
    const { store } = this.deps;
    if (sessionId !== undefined) {
      const s = await store.sessions.getOwned(userId, sessionId);
      if (!s || s.parentId !== stream.id) throw new ClipRefused(404, `session ${sessionId.slice(0, 64)} of playback id ${stream.playbackId} not found`);
      return s;
    }
    const open = (await store.sessions.listOpenForParent(stream.id))[0];
    if (open) return open;
    const latest = (await store.sessions.listForParent(stream.id, { recordedOnly: false }, { limit: 1 })).items[0];
    if (!latest) throw new ClipRefused(400, `stream ${stream.id} has had no session: there is nothing to clip`);
    return latest;
  }
}

/** Bytes and seconds of the segments a clip is cut from, when they are on this disk (a recording in the bucket is not). */
function segmentBytes(source: ClipSource): { bytes: number; seconds: number } | undefined {
  let bytes = 0;
  let seconds = 0;
  try {
    for (const s of source.plan.segments) {
      bytes += fs.statSync(path.join(source.dir, s.uri)).size;
      seconds += s.duration;
    }
  } catch {
    return undefined;
  }
  return { bytes, seconds };
}

/** Free space for an unprivileged writer on the file system `dir` is (or would be) on. */
export function freeBytesAt(dir: string): number {
  let at = path.resolve(dir);
  while (!fs.existsSync(at) && path.dirname(at) !== at) at = path.dirname(at);
  const st = fs.statfsSync(at);
  return st.bavail * st.bsize;
}
