import path from "node:path";
import { AssetsRepository, type AssetRecord, type SessionRecord, type Sql, type Store, type StreamRecord } from "../db";
import type { NewJob } from "../queue";
import type { RecordingStore } from "../storage";
import { presentAsset, type AssetJson } from "./present";
import { describeAvailable, resolveClipSource, type SourcePaths } from "./sources";

export const CLIP_QUEUE = "asset-clip";

export interface ClipJob {
  assetId: string;
}

/** An asset's clip job: its id is the asset's, so an asset is made by one job. */
export const clipJob = (asset: Pick<AssetRecord, "id" | "userId">): NewJob<ClipJob> => ({ id: `clip-${asset.id}`, data: { assetId: asset.id }, owner: asset.userId });

/** Default MAX_CLIP_SECONDS: ten minutes, Livepeer's "last minutes of a stream", copied in seconds. */
export const DEFAULT_MAX_CLIP_SECONDS = 600;

/** A clip request refused: `status` is the HTTP answer (the API maps it). */
export class ClipRefused extends Error {
  constructor(
    readonly status: 400 | 404,
    message: string,
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
   * is too long or not wholly within the live window or the session's recording → 400 saying
   * what is available.
   */
  async create(userId: string, r: ClipRequest): Promise<{ asset: AssetJson; task: { id: string } }> {
    const { store } = this.deps;
    const stream = await store.streams.getByPlaybackId(r.playbackId);
    if (!stream || stream.userId !== userId || stream.parentId !== null) throw new ClipRefused(404, `playback id ${r.playbackId.slice(0, 64)} not found`);
    const session = await this.sessionOf(userId, stream, r.sessionId);
    const maxMs = this.deps.maxClipSeconds * 1000;
    let endTime = r.endTime;
    if (endTime === undefined) {
      // No end: up to the newest media there is (bounded by the maximum length).
      const all = await resolveClipSource(this.deps, session, stream.playbackId!, r.startTime, Number.MAX_SAFE_INTEGER);
      const newest = all.ok ? undefined : Math.max(...all.available.map((a) => a.to));
      if (newest === undefined || !Number.isFinite(newest) || newest <= r.startTime) {
        throw new ClipRefused(400, `startTime ${r.startTime} is not within what can be clipped: ${describeAvailable(all.ok ? [] : all.available)}`);
      }
      endTime = Math.min(newest, r.startTime + maxMs);
    }
    if (endTime - r.startTime > maxMs) throw new ClipRefused(400, `a clip is at most ${this.deps.maxClipSeconds} s long (MAX_CLIP_SECONDS); asked for ${((endTime - r.startTime) / 1000).toFixed(1)} s`);
    const found = await resolveClipSource(this.deps, session, stream.playbackId!, r.startTime, endTime);
    if (!found.ok) {
      throw new ClipRefused(400, `startTime ${r.startTime} to endTime ${endTime} is not within what can be clipped of session ${session.id}: ${describeAvailable(found.available)}`);
    }
    const asset = await store.transaction(async (tx) => {
      const created = await new AssetsRepository(tx.db).create({
        userId,
        name: r.name ?? `${stream.name} clip`,
        streamId: stream.id,
        sessionId: session.id,
        sourcePlaybackId: stream.playbackId!,
        clipStart: r.startTime,
        clipEnd: endTime,
      });
      await this.deps.enqueue(clipJob(created), tx.db);
      return created;
    });
    return { asset: this.present(asset), task: { id: clipJob(asset).id } };
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
