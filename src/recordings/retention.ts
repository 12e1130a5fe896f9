import path from "node:path";
import { LocalRecordingStore, type RecordingStore } from "../storage";
import { startSweeping, type Store } from "../db";
import type { Logger } from "../log";

const DAY_MS = 24 * 3600_000;

/** The end time before which recordings expire; undefined when they are kept forever (pure). */
export function retentionCutoff(now: number, retentionDays: number): number | undefined {
  return retentionDays > 0 ? now - retentionDays * DAY_MS : undefined;
}

/**
 * Deletes the files of recordings older than the retention (RECORDINGS_RETENTION_DAYS) and marks
 * them `deleted`; the session rows stay, as history. Returns how many were deleted.
 */
export async function sweepRecordings(
  store: Store,
  recordingsDir: string,
  retentionDays: number,
  log: Logger,
  now = Date.now(),
  objects: RecordingStore = new LocalRecordingStore(),
): Promise<number> {
  const cutoff = retentionCutoff(now, retentionDays);
  if (cutoff === undefined) return 0;
  let deleted = 0;
  for (const s of await store.sessions.listRecordingsEndedBefore(cutoff)) {
    // Only waiting for finalize a long time ago means it is stuck; leave it to the finalize job.
    if (s.recordingStatus === "waiting") continue;
    // The local folder, and with object storage the session's prefix in the bucket.
    await objects.delete(s.id, path.join(recordingsDir, s.id));
    await store.sessions.setRecordingStatus(s.id, "deleted");
    deleted++;
  }
  if (deleted > 0) log.info({ deleted, retentionDays }, "deleted recordings past their retention");
  return deleted;
}

/** Sweeps at start and then every hour, until stopped. */
export function startRetention(store: Store, recordingsDir: string, retentionDays: number, log: Logger, objects?: RecordingStore): () => void {
  if (retentionDays <= 0) return () => {};
  return startSweeping("recording retention sweep", () => sweepRecordings(store, recordingsDir, retentionDays, log, Date.now(), objects), log);
}
