import fs from "node:fs";
import path from "node:path";
import type { Store } from "../db";
import type { RecordingStore } from "../storage";
import type { EventSink } from "../events";
import type { Logger } from "../log";
import { buildMasterPlaylist, parseMediaPlaylist, renditionLadder, THUMBNAIL_FILE, writeAtomically, type ProcessRegistry } from "../media";
import { RetryLater, type Job } from "../queue";
import { presentSession, recordingUrls, type RecordingLinks, type Rendition } from "../shapes";
import type { FinalizeJob } from "./recorder";
import { DEFAULT_REMUX_STALL_MS, RemuxFailed, RemuxInterrupted, remuxToMp4 } from "./remux";
import { freeBytesAt, isNoSpace, mp4BytesNeeded, saysNoSpace, spaceShortfall } from "./space";
import { makeRecordingStill } from "./thumbnail";
import { bestRendition, buildVodPlaylist, isSegmentFileName } from "./vod";

/** Remuxes that fail (or stall) this many times mark the recording failed. */
export const FINALIZE_ATTEMPTS = 3;
/** A recording that does not fit on the disk yet is looked at again this often. */
export const DEFAULT_SPACE_RETRY_MS = 60_000;

export interface FinalizeDeps {
  store: Store;
  events: EventSink;
  log: Logger;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
  recordingsDir: string;
  /** PUBLIC_URL and the signing of recording URLs: recording.ready carries them. */
  links(): RecordingLinks;
  /** Free space live sessions need (STORAGE_MIN_FREE_MB): the MP4 must leave it. 0 when absent. */
  minFreeBytes?: number;
  /** A remux that makes no progress this long is stopped (FINALIZE_STALL_SECONDS). */
  stallMs?: number;
  /** Delay before looking again at a recording whose MP4 does not fit. */
  spaceRetryMs?: number;
  /** Object storage: the recording is fetched from it (another node may have recorded it) and the result written back. Absent: the local disk alone. */
  objects?: RecordingStore;
}

/** The disk lacks room for the MP4: the server's problem, not the recording's. */
class NoRoom extends Error {}

/**
 * The finalize job: close every rendition's playlist as VOD, make sure a master playlist
 * exists, remux the best rendition into output.mp4, then `ready` and recording.ready.
 *
 * A remux that fails or stops making progress is tried again; after the last try the recording
 * is `failed` with the reason. Two things are never held against a recording: a disk without
 * room for its MP4 (the job waits, looking again every minute, however long it takes), and a
 * shutdown (`interrupt()`: the remux is stopped and the job runs after the restart with the
 * same attempt number).
 */
export class RecordingFinalizer {
  private readonly running = new Set<AbortController>();
  private interrupted = false;

  constructor(private readonly deps: FinalizeDeps) {}

  /** Stops every remux running, and any attempt that would still start, without counting them. */
  interrupt(): void {
    this.interrupted = true;
    for (const c of this.running) c.abort();
  }

  readonly handle = async (job: Job<FinalizeJob>): Promise<void> => {
    const { deps } = this;
    const { store } = deps;
    const session = await store.sessions.get(job.data.sessionId);
    if (!session || session.recordingStatus === "ready" || session.recordingStatus === "failed") return;
    const log = deps.log.child({ streamId: session.parentId, sessionId: session.id, attempt: job.attempt });
    if (this.interrupted) throw new RetryLater(0, "the server is shutting down", { counted: false });
    const dir = path.join(deps.recordingsDir, session.id);
    const started = Date.now();
    const control = new AbortController();
    this.running.add(control);
    let needed: number | undefined;
    let closed: string[] = [];
    let still = false;
    try {
      // Recorded on another node (or this one, before a restart): its files come from the bucket.
      // The session's own renditions say which folders hold its recording; no file name is
      // ever read back from playlist text (which once carried user-chosen profile names).
      const ladder = renditionLadder(session.profiles, 1);
      if (deps.objects) await deps.objects.fetch(session.id, dir, ladder.map((r) => r.index));
      const recorded = closePlaylists(dir, ladder);
      closed = recorded.map((r) => `${r.rendition.index}/index.m3u8`);
      const best = bestRendition(recorded);
      if (!best) throw new Error("the recording has no playable rendition");
      needed = mp4BytesNeeded(best.bytes);
      const shortfall = spaceShortfall(freeBytesAt(dir), needed, deps.minFreeBytes ?? 0);
      if (shortfall) throw new NoRoom(shortfall);
      if (!deps.ffmpegPath) throw new Error("ffmpeg is not available on this server");
      await remuxToMp4({
        ffmpegPath: deps.ffmpegPath,
        registry: deps.registry,
        log,
        playlist: path.join(dir, String(best.rendition.index), "index.m3u8"),
        output: path.join(dir, "output.mp4"),
        stallMs: deps.stallMs ?? DEFAULT_REMUX_STALL_MS,
        signal: control.signal,
      });
      // The poster of the recording's player page, served beside the MP4 (never fails the recording).
      still = await makeRecordingStill({
        ffmpegPath: deps.ffmpegPath,
        registry: deps.registry,
        log,
        mp4: path.join(dir, "output.mp4"),
        output: path.join(dir, THUMBNAIL_FILE),
        durationSeconds: best.seconds,
        signal: control.signal,
      });
    } catch (err) {
      if (err instanceof RemuxInterrupted) {
        log.info("recording finalize interrupted by the shutdown: it runs again after the restart, this attempt not counted");
        throw new RetryLater(0, err.message, { counted: false });
      }
      const reason = err instanceof Error ? err.message : String(err);
      // A full disk, found before the remux or by it, is the server's problem, not the recording's.
      const noRoom = err instanceof NoRoom || isNoSpace(err) || (err instanceof RemuxFailed && (saysNoSpace(err.stderrTail) || this.lacksRoom(dir, needed)));
      if (noRoom) {
        const delayMs = deps.spaceRetryMs ?? DEFAULT_SPACE_RETRY_MS;
        log.warn({ reason, retryInMs: delayMs }, "recording finalize waits for free space; this attempt is not counted");
        throw new RetryLater(delayMs, reason, { counted: false });
      }
      if (job.attempt < FINALIZE_ATTEMPTS) {
        log.warn({ reason }, "recording finalize failed; will try again");
        throw new RetryLater(2000 * 2 ** (job.attempt - 1), reason);
      }
      await store.sessions.setRecordingStatus(session.id, "failed", reason);
      log.error({ reason, attempts: job.attempt }, "recording finalize failed for good: recording marked failed");
      return;
    } finally {
      this.running.delete(control);
    }
    // The closed playlists, the master and the MP4 go to the bucket before the recording is ready.
    try {
      await deps.objects?.put(session.id, [...closed, "index.m3u8", "output.mp4", ...(still ? [THUMBNAIL_FILE] : [])]);
    } catch (err) {
      log.warn({ err }, "could not store the recording in the object store; will try again");
      throw new RetryLater(5_000, `object store: ${err instanceof Error ? err.message : String(err)}`, { counted: false });
    }
    const links = deps.links();
    const urls = recordingUrls(links, session.id);
    await store.transaction(async (tx) => {
      await tx.sessions.setRecordingStatus(session.id, "ready");
      const ready = (await tx.sessions.get(session.id))!;
      await deps.events.raise(
        "recording.ready",
        session.parentId,
        { sessionId: session.id, recordingUrl: urls.recordingUrl, mp4Url: urls.mp4Url, session: presentSession(ready, links) },
        tx,
      );
    });
    log.info({ ms: Date.now() - started }, "recording ready");
  };

  /** Whether the MP4 still lacks room (another writer may have filled the disk during the remux). */
  private lacksRoom(dir: string, needed: number | undefined): boolean {
    if (needed === undefined) return false;
    try {
      return spaceShortfall(freeBytesAt(dir), needed, this.deps.minFreeBytes ?? 0) !== undefined;
    } catch {
      return false;
    }
  }
}

export interface RecordedRendition {
  rendition: Rendition;
  /** bits per second over the recording */
  bandwidth: number;
  /** its segments' size */
  bytes: number;
  /** its segments' duration */
  seconds: number;
}

/**
 * Rewrites the playlist of each of the session's renditions as VOD (only segments whose files
 * exist) and makes sure the master playlist lists exactly those renditions, writing it anew
 * from them when the live one was never copied or lists anything else. Returns the renditions
 * that have media.
 */
export function closePlaylists(dir: string, renditions: Rendition[]): RecordedRendition[] {
  const recorded: RecordedRendition[] = [];
  for (const rendition of renditions) {
    const folder = path.join(dir, String(rendition.index));
    const file = path.join(folder, "index.m3u8");
    if (!fs.existsSync(file)) continue;
    const segments = keepDiscontinuities(
      parseMediaPlaylist(fs.readFileSync(file, "utf8")).segments,
      (s) =>
        isSegmentFileName(s.uri) &&
        fs.existsSync(path.join(folder, s.uri)) &&
        (s.map === undefined || (isSegmentFileName(s.map) && fs.existsSync(path.join(folder, s.map)))),
    );
    if (segments.length === 0) continue;
    writeAtomically(file, buildVodPlaylist(segments, true));
    const bytes = segments.reduce((n, s) => n + fs.statSync(path.join(folder, s.uri)).size, 0);
    const seconds = segments.reduce((n, s) => n + s.duration, 0);
    recorded.push({ rendition, bandwidth: seconds > 0 ? (bytes * 8) / seconds : 1, bytes, seconds });
  }
  const masterFile = path.join(dir, "index.m3u8");
  const wanted = recorded.map((r) => `${r.rendition.index}/index.m3u8`);
  if (!(fs.existsSync(masterFile) && listsExactly(fs.readFileSync(masterFile, "utf8"), wanted)) && recorded.length > 0) {
    const variants = recorded.map((r) => ({
      uri: `${r.rendition.index}/index.m3u8`,
      name: r.rendition.name,
      bandwidth: r.bandwidth,
      width: r.rendition.encode?.width,
      height: r.rendition.encode?.height,
    }));
    writeAtomically(masterFile, buildMasterPlaylist(variants));
  }
  return recorded;
}

/**
 * Whether a master playlist lists `uris`, each once, and holds nothing but the tags onair's
 * master playlists have (pure): anything else is rewritten rather than served.
 */
export function listsExactly(master: string, uris: string[]): boolean {
  const lines = master.split(/\r?\n|\r/).map((l) => l.trim()).filter((l) => l !== "");
  const tagsKnown = lines.every((l) => !l.startsWith("#") || /^#(EXTM3U|EXT-X-VERSION:\d+|EXT-X-INDEPENDENT-SEGMENTS|EXT-X-STREAM-INF:.*)$/.test(l));
  const listed = lines.filter((l) => !l.startsWith("#"));
  return tagsKnown && listed.length === uris.length && uris.every((u) => listed.includes(u));
}

/** The segments `keep` keeps; a seam's mark on a dropped segment moves to the next one kept (pure). */
export function keepDiscontinuities<S extends { discontinuity?: boolean }>(segments: S[], keep: (s: S) => boolean): S[] {
  const kept: S[] = [];
  let seam = false;
  for (const s of segments) {
    seam ||= s.discontinuity === true;
    if (!keep(s)) continue;
    kept.push(seam && !s.discontinuity ? { ...s, discontinuity: true } : s);
    seam = false;
  }
  return kept;
}
