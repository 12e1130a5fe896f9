import fs from "node:fs";
import path from "node:path";
import { AssetsRepository, type AssetRecord, type AssetVideoSpec, type Store } from "../db";
import type { EventSink } from "../events";
import { parseInit } from "../hls";
import type { Logger } from "../log";
import { spawnSupervised, type ProcessRegistry } from "../media";
import { RetryLater, type Job } from "../queue";
import type { RecordingStore } from "../storage";
import { buildClipArgs, progressSeconds } from "./clipArgs";
import { presentAsset } from "./present";
import { cutBytesNeeded, estimateClipBytes, freeSpaceRefusal } from "./quota";
import { freeBytesAt, type ClipJob } from "./service";
import { resolveClipSource, describeAvailable, type SourcePaths, type ClipSource } from "./sources";
import type { TimedSegment } from "./timeline";

/** Runs that fail (ffmpeg, storage) this many times mark the asset failed. */
export const CLIP_ATTEMPTS = 3;
/** Seconds of the clip's own HLS segments. */
const CLIP_HLS_SEGMENT_SECONDS = 2;
/** Progress is written at most this often. */
const PROGRESS_EVERY_MS = 1000;

export interface ClipMakerDeps extends SourcePaths {
  store: Store;
  events: EventSink;
  log: Logger;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
  /** `DATA_DIR/assets`: `<assetId>/` holds a ready asset's files; `<assetId>.work/` a run's. */
  assetsDir: string;
  /** The assets' store: local disk, or the bucket under `assets/<id>/`. */
  objects: RecordingStore;
  publicUrl(): string;
  /** STORAGE_MIN_FREE_MB in bytes: a cut must leave it free (0 when absent). */
  minFreeBytes?: number;
}

/** The asset's files, as the HTTP routes serve them. */
export const ASSET_MP4 = "video.mp4";
export const ASSET_PLAYLIST = "index.m3u8";

/** The range is no longer anywhere: no retry can help. */
class SourceGone extends Error {}

/**
 * The clip job: the chosen segments (hard-linked into a work folder, so the live window moving
 * on cannot take them away mid-cut) are copied by one ffmpeg into the MP4 and an HLS rendition;
 * then the files are stored, the asset is `ready` and asset.ready raised. ffmpeg or storage
 * failing is tried again (CLIP_ATTEMPTS); a range that is gone fails at once. The work folder
 * never outlives a run.
 */
export class ClipMaker {
  private readonly running = new Set<{ kill(): void }>();
  private interrupted = false;

  constructor(private readonly deps: ClipMakerDeps) {}

  /** Stops every ffmpeg running; their jobs run again after the restart, the attempt not counted. */
  interrupt(): void {
    this.interrupted = true;
    for (const p of this.running) p.kill();
  }

  readonly handle = async (job: Job<ClipJob>): Promise<void> => {
    const { deps } = this;
    const assets = new AssetsRepository(deps.store.db);
    const asset = await assets.get(job.data.assetId);
    if (!asset || asset.phase === "ready" || asset.phase === "failed") return;
    if (this.interrupted) throw new RetryLater(0, "the server is shutting down", { counted: false });
    const log = deps.log.child({ assetId: asset.id, streamId: asset.streamId, sessionId: asset.sessionId, attempt: job.attempt });
    const work = path.join(deps.assetsDir, `${asset.id}.work`);
    const final = path.join(deps.assetsDir, asset.id);
    const started = Date.now();
    let made: { size: number; duration: number; videoSpec: AssetVideoSpec };
    try {
      await assets.setProcessing(asset.id, 0);
      made = await this.cut(asset, work, log);
      fs.rmSync(final, { recursive: true, force: true });
      fs.renameSync(work, final);
      const files = fs.readdirSync(final);
      // The playlist last: it names the segments.
      await deps.objects.put(asset.id, [...files.filter((f) => f !== ASSET_PLAYLIST), ASSET_PLAYLIST]);
      // In the bucket, every node serves it from there: no second copy on this disk.
      if (deps.objects.kind === "s3") fs.rmSync(final, { recursive: true, force: true });
    } catch (err) {
      fs.rmSync(work, { recursive: true, force: true });
      const reason = err instanceof Error ? err.message : String(err);
      if (this.interrupted) throw new RetryLater(0, "interrupted by the server's shutdown", { counted: false });
      if (!(err instanceof SourceGone) && job.attempt < CLIP_ATTEMPTS) {
        log.warn({ reason }, "clip failed; will try again");
        throw new RetryLater(1000 * 2 ** (job.attempt - 1), reason);
      }
      log.error({ reason, attempts: job.attempt }, "clip failed for good: asset marked failed");
      await this.finish(asset, "failed", async (repo) => repo.setFailed(asset.id, reason));
      return;
    }
    const kept = await this.finish(asset, "ready", async (repo) => repo.setReady(asset.id, made));
    if (!kept) await deps.objects.delete(asset.id, final).catch(() => undefined);
    log.info({ ms: Date.now() - started, seconds: made.duration, bytes: made.size }, kept ? "clip ready" : "clip made for an asset deleted meanwhile: files removed");
  };

  /** Writes the end state and raises its event in one transaction; false when the asset was deleted meanwhile. */
  private async finish(asset: AssetRecord, outcome: "ready" | "failed", write: (repo: AssetsRepository) => Promise<void>): Promise<boolean> {
    const { deps } = this;
    return deps.store.transaction(async (tx) => {
      const repo = new AssetsRepository(tx.db);
      if (!(await repo.get(asset.id))) return false;
      await write(repo);
      const now = (await repo.get(asset.id))!;
      const payload = { sessionId: asset.sessionId, assetId: asset.id, asset: presentAsset(now, deps.publicUrl()) };
      if (outcome === "ready") await deps.events.raise("asset.ready", asset.streamId, payload, tx);
      else await deps.events.raise("asset.failed", asset.streamId, { ...payload, error: now.errorMessage ?? "the clip failed" }, tx);
      return true;
    });
  }

  /** Plans the cut again (the window has moved since the request), gathers the segments, runs ffmpeg. */
  private async cut(asset: AssetRecord, work: string, log: Logger): Promise<{ size: number; duration: number; videoSpec: AssetVideoSpec }> {
    const { deps } = this;
    if (!deps.ffmpegPath) throw new Error("ffmpeg is not available on this server");
    const session = await deps.store.sessions.get(asset.sessionId);
    if (!session) throw new SourceGone(`session ${asset.sessionId} no longer exists`);
    const found = await resolveClipSource(deps, session, asset.sourcePlaybackId, asset.clipStart, asset.clipEnd);
    if (!found.ok) throw new SourceGone(`the range is no longer available to clip: ${describeAvailable(found.available)}`);
    const { source } = found;
    // A recording in the bucket is fetched for the cut and removed after it (only a copy made
    // here; one that was on this disk already stays).
    const recordingDir = path.join(deps.recordingsDir, session.id);
    const fetched = source.kind === "recording" && !fs.existsSync(recordingDir);
    if (source.kind === "recording") await deps.recordings.fetch(session.id, recordingDir, [0]);
    try {
      return await this.cutFrom(asset, source, work, log);
    } finally {
      if (fetched) fs.rmSync(recordingDir, { recursive: true, force: true });
    }
  }

  private async cutFrom(asset: AssetRecord, source: ClipSource, work: string, log: Logger): Promise<{ size: number; duration: number; videoSpec: AssetVideoSpec }> {
    const { deps } = this;
    const ffmpegPath = deps.ffmpegPath!;
    if (this.interrupted) throw new RetryLater(0, "the server is shutting down", { counted: false });
    // Checked again where the cut runs (a worker's disk, and later than the request): a clip
    // must not take the room live sessions need. A failed attempt: tried again, then failed.
    const estimate = asset.size ?? estimateClipBytes(source.plan.durationSeconds, undefined, { sourceBytes: 0, transcodedBytes: 0, sourceSegmentsDuration: 0 });
    const room = freeSpaceRefusal(freeBytesAt(deps.assetsDir), cutBytesNeeded(estimate), deps.minFreeBytes ?? 0);
    if (room) throw new Error(room);
    fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(work, { recursive: true });
    const input = path.join(work, "source");
    fs.mkdirSync(input);
    const segments = source.plan.segments;
    for (const name of new Set(segments.flatMap((s) => [s.map, s.uri]))) {
      try {
        linkOrCopy(path.join(source.dir, name), path.join(input, name));
      } catch (err) {
        // The live window moved past it between the plan and here: the next attempt plans again (the recording may have it).
        if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new Error(`segment ${name} left the ${source.kind === "live" ? "live window" : "recording"} before it was read`);
        throw err;
      }
    }
    fs.writeFileSync(path.join(input, "index.m3u8"), sourcePlaylist(segments));
    const out = path.join(work, "out");
    fs.mkdirSync(out);
    const mp4Tmp = path.join(out, `${ASSET_MP4}.tmp`);
    const args = buildClipArgs({ playlist: path.join(input, "index.m3u8"), durationSeconds: source.plan.durationSeconds, mp4: mp4Tmp, hlsDir: out, hlsSegmentSeconds: CLIP_HLS_SEGMENT_SECONDS });
    const assets = new AssetsRepository(deps.store.db);
    let outSeconds = 0;
    let lastWrite = 0;
    const p = spawnSupervised(deps.registry, {
      command: ffmpegPath,
      args,
      log,
      name: "ffmpeg clip",
      cwd: work,
      onStdoutLine: (line) => {
        const s = progressSeconds(line);
        if (s === undefined) return;
        outSeconds = s;
        const now = Date.now();
        if (now - lastWrite < PROGRESS_EVERY_MS) return;
        lastWrite = now;
        assets.setProcessing(asset.id, Math.min(0.99, s / source.plan.durationSeconds)).catch(() => undefined);
      },
    });
    this.running.add(p);
    // A shutdown that came while the source was fetched or planned: this ffmpeg is stopped too.
    if (this.interrupted) p.kill();
    // A copy runs at disk speed; one that takes longer than the clip plays is stuck.
    const timer = setTimeout(() => p.kill(), Math.max(60_000, source.plan.durationSeconds * 1000));
    const end = await p.ended.finally(() => {
      clearTimeout(timer);
      this.running.delete(p);
    });
    if (end.code !== 0) throw new Error(`ffmpeg clip failed (exit ${end.code ?? end.signal}): ${end.stderrTail.slice(-3).join(" | ") || "no output"}`);
    fs.renameSync(mp4Tmp, path.join(out, ASSET_MP4));
    // Only the outputs stay: the linked source goes.
    fs.rmSync(input, { recursive: true, force: true });
    for (const f of fs.readdirSync(out)) fs.renameSync(path.join(out, f), path.join(work, f));
    fs.rmdirSync(out);
    const size = fs.statSync(path.join(work, ASSET_MP4)).size;
    const duration = outSeconds > 0 ? Math.round(outSeconds * 1000) / 1000 : source.plan.durationSeconds;
    log.debug({ from: source.kind, segments: segments.length }, "clip cut");
    return { size, duration, videoSpec: videoSpecOf(fs.readFileSync(path.join(work, "init.mp4")), duration) };
  }
}

/** A VOD playlist of the chosen segments, by their names in the work folder (pure). */
export function sourcePlaylist(segments: Pick<TimedSegment, "uri" | "duration" | "map" | "discontinuity">[]): string {
  const target = Math.max(1, Math.ceil(Math.max(...segments.map((s) => s.duration))));
  const lines = ["#EXTM3U", "#EXT-X-VERSION:7", `#EXT-X-TARGETDURATION:${target}`, "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-PLAYLIST-TYPE:VOD"];
  let map: string | undefined;
  segments.forEach((s, i) => {
    if (i > 0 && s.discontinuity) lines.push("#EXT-X-DISCONTINUITY");
    if (s.map !== map) lines.push(`#EXT-X-MAP:URI="${s.map}"`);
    map = s.map;
    lines.push(`#EXTINF:${s.duration.toFixed(6)},`, s.uri);
  });
  lines.push("#EXT-X-ENDLIST");
  return lines.join("\n") + "\n";
}

/** Livepeer's videoSpec from the clip's init segment (pure): codec names as ffprobe gives them. */
export function videoSpecOf(init: Buffer, duration: number): AssetVideoSpec {
  const tracks: AssetVideoSpec["tracks"] = [];
  for (const t of parseInit(init)) {
    const codec = t.codec.startsWith("avc1") || t.codec.startsWith("avc3") ? "h264" : t.codec.startsWith("mp4a") ? "aac" : t.codec;
    if (t.handler === "vide") tracks.push({ type: "video", codec, ...(t.width ? { width: t.width, height: t.height } : {}) });
    else if (t.handler === "soun") tracks.push({ type: "audio", codec, ...(t.channels ? { channels: t.channels } : {}), ...(t.sampleRate ? { sampleRate: t.sampleRate } : {}) });
  }
  return { format: "mp4", duration, tracks };
}

/** Same file system: a hard link costs nothing and outlives the live window's deletion of the segment. */
function linkOrCopy(from: string, to: string): void {
  try {
    fs.linkSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw err;
    fs.copyFileSync(from, to);
  }
}
