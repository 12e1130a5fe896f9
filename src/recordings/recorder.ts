import fs from "node:fs";
import path from "node:path";
import type { SessionRecord, Sql, Store, Tx } from "../db";
import type { EventSink } from "../events";
import { writeAtomically } from "../media";
import type { NewJob } from "../queue";
import type { LiveSessionInfo, LiveSessionObserver, WrittenSegment } from "../sessions";
import type { RecordingStore } from "../storage";
import { buildVodPlaylist, type RecordedSegment } from "./vod";

export const FINALIZE_QUEUE = "recording-finalize";

/** A session's finalize job: its id is the session's, so a session is finalized by one job. */
export const finalizeJob = (sessionId: string): NewJob<FinalizeJob> => ({ id: `finalize-${sessionId}`, data: { sessionId } });

/** The finalize jobs that must exist: one per recording waiting (for `JobQueue.expect`). */
export async function expectedFinalizeJobs(store: Store, limit: number): Promise<NewJob<FinalizeJob>[]> {
  return (await store.sessions.listWaitingForFinalize(limit)).map((s) => finalizeJob(s.id));
}

export interface FinalizeJob {
  sessionId: string;
}

export interface RecorderDeps {
  store: Store;
  events: EventSink;
  /** `<DATA_DIR>/recordings` */
  recordingsDir: string;
  /** Where recordings are copied beyond this node (object storage), or the local disk alone. */
  objects: RecordingStore;
  /** Enqueues the finalize job inside the transaction `within` (durable: the queue's outbox is in the same database). */
  enqueueFinalize(sessionId: string, within: Sql): Promise<void>;
}

/** One recorded session's files as they are captured. */
class SessionRecording {
  readonly variants = new Map<number, RecordedSegment[]>();
  /** The pipeline run that wrote each rendition's last segment. */
  readonly lastRun = new Map<number, number>();
  /** recording.started was raised (once per session, whatever its reconnects). */
  announced = false;
  /** Init segments copied to the object store already. */
  readonly initsSaved = new Set<string>();

  constructor(readonly dir: string) {}

  get segmentCount(): number {
    let n = 0;
    for (const list of this.variants.values()) n += list.length;
    return n;
  }
}

/**
 * Records sessions whose `record` was on when they started (docs/api.md#spec-32-recording-switch): every segment the live
 * pipeline completes is hard-linked into `recordings/<sessionId>/<rendition>/` and appended to
 * that rendition's playlist. The recording is a by-product of the single live encode: no
 * second decode or encode, and what was captured stays playable whatever happens next.
 */
export class Recorder implements LiveSessionObserver {
  /** null: the session is not recorded. */
  private readonly sessions = new Map<string, SessionRecording | null>();

  constructor(private readonly deps: RecorderDeps) {}

  segmentWritten(info: LiveSessionInfo, segment: WrittenSegment): void {
    let rec = this.sessions.get(info.sessionId);
    if (rec === undefined) {
      rec = info.record ? new SessionRecording(path.join(this.deps.recordingsDir, info.sessionId)) : null;
      this.sessions.set(info.sessionId, rec);
    }
    if (!rec) return;
    try {
      const dir = path.join(rec.dir, String(segment.rendition.index));
      fs.mkdirSync(dir, { recursive: true });
      // The init first: the playlist never names a segment a player cannot decode.
      linkOrCopy(segment.map.file, path.join(dir, segment.map.uri));
      linkOrCopy(segment.file, path.join(dir, segment.uri));
      const list = rec.variants.get(segment.rendition.index) ?? [];
      // A later run's segments (a restart, a reconnect) follow a seam: players and the MP4 remux must know.
      const afterRestart = list.length > 0 && rec.lastRun.get(segment.rendition.index) !== segment.run;
      list.push({ uri: segment.uri, duration: segment.duration, map: segment.map.uri, ...(afterRestart ? { discontinuity: true } : {}) });
      rec.variants.set(segment.rendition.index, list);
      rec.lastRun.set(segment.rendition.index, segment.run);
      writeAtomically(path.join(dir, "index.m3u8"), buildVodPlaylist(list, false));
      // Copied out in this order: the init and the segment before the playlist that names them.
      const variant = String(segment.rendition.index);
      const files = [`${variant}/${segment.uri}`, `${variant}/index.m3u8`];
      const init = `${variant}/${segment.map.uri}`;
      if (!rec.initsSaved.has(init)) {
        rec.initsSaved.add(init);
        files.unshift(init);
      }
      void this.deps.objects.saved(info.sessionId, files);
    } catch (err) {
      // A full or failing disk loses this segment from the recording, not the live stream.
      info.log.error({ err, segment: segment.uri }, "could not record a segment");
    }
  }

  /**
   * The stream is active and every rendition has its first segment recorded: recording has
   * started on an active stream (docs/api.md#spec-33-recording-lifecycle). The live master playlist describes the recording's
   * renditions as well.
   */
  sessionLive(info: LiveSessionInfo): void {
    const rec = this.sessions.get(info.sessionId);
    if (!rec || rec.announced) return;
    rec.announced = true;
    info.log.info({ dir: rec.dir }, "recording started");
    this.deps.events.raise("recording.started", info.streamId, { sessionId: info.sessionId }).catch(() => undefined); // logged by the sink
    try {
      fs.copyFileSync(path.join(info.hlsDir, "index.m3u8"), path.join(rec.dir, "index.m3u8"));
      void this.deps.objects.saved(info.sessionId, ["index.m3u8"]);
    } catch (err) {
      info.log.warn({ err }, "could not copy the master playlist into the recording; finalize will write one");
    }
  }

  sessionEnded(info: LiveSessionInfo): void {
    const rec = this.sessions.get(info.sessionId);
    this.sessions.delete(info.sessionId);
    if (rec === null) return;
    if (!info.record) return;
    // The node that took the lease (or the janitor) handed the recording over already.
    if (info.leaseLost()) return void info.log.warn("recording left to the stream's new holder: this node lost its lease");
    if (!rec || rec.segmentCount === 0) {
      this.deps.store.sessions
        .settleRecording(info.sessionId, "failed", "no media was received, so nothing was recorded")
        .catch((err: unknown) => info.log.error({ err }, "could not mark the recording failed"));
      info.log.warn("recorded session ended without any media: no recording");
      return;
    }
    // Not written (the database is away): the recording stays unfinalized, and the next
    // start's recovery hands it to finalize.
    this.markWaiting(info.streamId, info.sessionId).then(
      () => info.log.info({ segments: rec.segmentCount }, "recording waiting for finalize"),
      (err: unknown) => info.log.error({ err }, "could not hand the recording to finalize"),
    );
  }

  /**
   * At start: recorded sessions that ended without reaching finalize (the previous run died, or
   * the disk was full at their end). What was captured is on disk; finalize makes it a recording.
   */
  async recoverAfterCrash(unfinalized: SessionRecord[]): Promise<void> {
    for (const s of unfinalized) {
      if (!s.record) continue;
      const kept = await this.kept(s.id);
      await this.deps.store.transaction((tx) => this.handOff(tx, s.parentId, s.id, kept));
    }
  }

  /**
   * Whether anything of the session's recording was kept. An object store that does not answer
   * now must not hold up a takeover or a recovery: the recording goes to finalize, which looks
   * again (and retries) before it decides.
   */
  async kept(sessionId: string): Promise<boolean> {
    return this.deps.objects.exists(sessionId, path.join(this.deps.recordingsDir, sessionId)).catch(() => true);
  }

  /**
   * A recorded session that ended without this recorder seeing its end (a crash, a node that
   * died): what was captured goes to finalize; nothing captured is a failed recording.
   */
  async handOff(tx: Tx, streamId: string, sessionId: string, kept: boolean): Promise<void> {
    if (kept) await this.markWaitingIn(tx, streamId, sessionId);
    else await tx.sessions.settleRecording(sessionId, "failed", "the server stopped before anything was recorded");
  }

  /**
   * waiting + recording.waiting + the finalize job, in one transaction: none without the others,
   * and once: a recording another node handed over already is left as it is.
   */
  private async markWaiting(streamId: string, sessionId: string): Promise<void> {
    await this.deps.store.transaction((tx) => this.markWaitingIn(tx, streamId, sessionId));
  }

  private async markWaitingIn(tx: Tx, streamId: string, sessionId: string): Promise<void> {
    if (!(await tx.sessions.settleRecording(sessionId, "waiting"))) return;
    await this.deps.events.raise("recording.waiting", streamId, { sessionId }, tx);
    await this.deps.enqueueFinalize(sessionId, tx.db);
  }
}

/** Same file system: a hard link costs nothing and survives the live window's deletion. */
function linkOrCopy(from: string, to: string): void {
  try {
    fs.linkSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return;
    fs.copyFileSync(from, to);
  }
}
