import fs from "node:fs";
import path from "node:path";
import type { Store } from "../db";
import type { EventSink } from "../events";
import type { Logger } from "../log";
import { buildMasterPlaylist, parseMediaPlaylist, renditionLadder, spawnSupervised, writeAtomically, type ProcessRegistry } from "../media";
import { RetryLater, type Job } from "../queue";
import { presentSession, recordingUrls, type Rendition } from "../shapes";
import type { FinalizeJob } from "./recorder";
import { bestRendition, buildMp4RemuxArgs, buildVodPlaylist, isSegmentFileName } from "./vod";

export const FINALIZE_ATTEMPTS = 3;
const REMUX_TIMEOUT_MS = 50_000;

export interface FinalizeDeps {
  store: Store;
  events: EventSink;
  log: Logger;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
  recordingsDir: string;
  publicUrl(): string;
}

/**
 * The finalize job: close every rendition's playlist as VOD, make sure a master playlist
 * exists, remux the best rendition into output.mp4, then `ready` and recording.ready. A failed
 * remux is tried again; after the last try the recording is `failed` with the reason.
 */
export function finalizeHandler(deps: FinalizeDeps) {
  return async (job: Job<FinalizeJob>): Promise<void> => {
    const { store } = deps;
    const session = store.sessions.get(job.data.sessionId);
    if (!session || session.recordingStatus === "ready" || session.recordingStatus === "failed") return;
    const log = deps.log.child({ streamId: session.parentId, sessionId: session.id, attempt: job.attempt });
    const dir = path.join(deps.recordingsDir, session.id);
    const started = Date.now();
    try {
      // The session's own renditions say which folders hold its recording; no file name is
      // ever read back from playlist text (which once carried user-chosen profile names).
      const recorded = closePlaylists(dir, renditionLadder(session.profiles, 1));
      const best = bestRendition(recorded);
      if (!best) throw new Error("the recording has no playable rendition");
      await remux(deps, log, path.join(dir, String(best.rendition.index), "index.m3u8"), path.join(dir, "output.mp4"));
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      if (job.attempt < FINALIZE_ATTEMPTS) {
        log.warn({ reason }, "recording finalize failed; will try again");
        throw new RetryLater(2000 * 2 ** (job.attempt - 1), reason);
      }
      store.sessions.setRecordingStatus(session.id, "failed", reason);
      log.error({ reason, attempts: job.attempt }, "recording finalize failed for good: recording marked failed");
      return;
    }
    const urls = recordingUrls(deps.publicUrl(), session.id);
    store.db.transaction(() => {
      store.sessions.setRecordingStatus(session.id, "ready");
      const ready = store.sessions.get(session.id)!;
      deps.events.raise("recording.ready", session.parentId, {
        sessionId: session.id,
        recordingUrl: urls.recordingUrl,
        mp4Url: urls.mp4Url,
        session: presentSession(ready, deps.publicUrl()),
      });
    })();
    log.info({ ms: Date.now() - started }, "recording ready");
  };
}

export interface RecordedRendition {
  rendition: Rendition;
  /** bits per second over the recording */
  bandwidth: number;
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
      (s) => isSegmentFileName(s.uri) && fs.existsSync(path.join(folder, s.uri)),
    );
    if (segments.length === 0) continue;
    writeAtomically(file, buildVodPlaylist(segments, true));
    const bytes = segments.reduce((n, s) => n + fs.statSync(path.join(folder, s.uri)).size, 0);
    const seconds = segments.reduce((n, s) => n + s.duration, 0);
    recorded.push({ rendition, bandwidth: seconds > 0 ? (bytes * 8) / seconds : 1 });
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

async function remux(deps: FinalizeDeps, log: Logger, playlist: string, output: string): Promise<void> {
  if (!deps.ffmpegPath) throw new Error("ffmpeg is not available on this server");
  const tmp = `${output}.tmp`;
  const p = spawnSupervised(deps.registry, { command: deps.ffmpegPath, args: buildMp4RemuxArgs(playlist, tmp), log, name: "ffmpeg remux" });
  // A copy remux runs at disk speed (60 s of 720p in about 0.25 s here); one that takes much
  // longer is stuck, and must not hold the job.
  const timer = setTimeout(() => p.kill(), REMUX_TIMEOUT_MS);
  const end = await p.ended.finally(() => clearTimeout(timer));
  if (end.code !== 0) {
    fs.rmSync(tmp, { force: true });
    throw new Error(`MP4 remux failed (ffmpeg exit ${end.code ?? end.signal}): ${end.stderrTail.slice(-3).join(" | ") || "no output"}`);
  }
  fs.renameSync(tmp, output);
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
