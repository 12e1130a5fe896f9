import path from "node:path";
import type { Store } from "../db";
import type { EventsArea } from "./events";
import type { Metrics } from "../metrics";
import { expectedFinalizeJobs, finalizeJob, FINALIZE_QUEUE, Recorder, RecordingFinalizer, startRetention, type FinalizeJob } from "../recordings";
import { LocalRecordingStore, S3RecordingStore, s3Client, type RecordingStore } from "../storage";
import type { MediaArea } from "./media";
import type { Wiring } from "./context";

export interface RecordingsArea {
  recordingsDir: string;
  objects: RecordingStore;
  recorder: Recorder;
}

/** Recordings: segments of recorded sessions kept, finalized by a queue job, deleted after their retention. */
export function wireRecordings({ config, log, stops }: Wiring, store: Store, { events, queue }: EventsArea, metrics: Metrics): RecordingsArea {
  const recordingsDir = path.join(config.dataDir, "recordings");
  // With S3_ENDPOINT/S3_BUCKET, recordings go to the bucket too, where every node finds them.
  const objects: RecordingStore = config.s3
    ? new S3RecordingStore(s3Client(config.s3), config.s3.bucket, (id) => path.join(recordingsDir, id), log, (ms) => metrics.recordingUpload(ms))
    : new LocalRecordingStore();
  const recorder = new Recorder({
    store,
    events,
    objects,
    recordingsDir,
    enqueueFinalize: (sessionId, within) => queue.enqueue<FinalizeJob>(FINALIZE_QUEUE, finalizeJob(sessionId), within),
  });
  // With Redis, a finalize job it lost is added again while the recording still waits.
  queue.expect(FINALIZE_QUEUE, () => expectedFinalizeJobs(store, 1_000));
  stops.register("drain", "recording retention", startRetention(store, recordingsDir, config.recordingsRetentionDays, log, objects));
  return { recordingsDir, objects, recorder };
}

/**
 * The finalize worker (worker nodes), once PUBLIC_URL is known: recording.ready carries the
 * recording's URLs. At the stop no job is taken (ending the live sessions enqueues theirs, for
 * the next start), and a remux running is stopped with its job released to run again after the
 * restart, this attempt not counted.
 */
export function startFinalizing(
  { config, log, stops, has }: Wiring,
  store: Store,
  { events, queue }: EventsArea,
  { processes, ffmpeg }: MediaArea,
  { recordingsDir, objects }: RecordingsArea,
  links: () => { publicUrl: string; sign(sessionId: string): string },
): void {
  const finalizer = new RecordingFinalizer({
    store,
    events,
    log,
    registry: processes,
    ffmpegPath: ffmpeg?.path,
    recordingsDir,
    links,
    minFreeBytes: config.storageMinFreeBytes,
    stallMs: config.finalizeStallMs,
    objects: objects.kind === "s3" ? objects : undefined,
  });
  const worker = has("worker") ? queue.process<FinalizeJob>(FINALIZE_QUEUE, finalizer.handle, { concurrency: 1 }) : undefined;
  stops.register("intake", "recording finalize worker", async () => {
    const closed = worker?.close();
    finalizer.interrupt();
    await closed;
  });
}
