import path from "node:path";
import { CLIP_QUEUE, clipJob, ClipMaker, ClipService, LiveClipBuffer, type ClipJob } from "../assets";
import type { Store } from "../db";
import { LocalRecordingStore, S3RecordingStore, s3Client, type RecordingStore } from "../storage";
import type { Wiring } from "./context";
import type { EventsArea } from "./events";
import type { MediaArea } from "./media";
import type { RecordingsArea } from "./recordings";

export interface ClipsArea {
  clips: ClipService;
  /** Each live session's source segments kept CLIP_WINDOW_SECONDS for clips (hard links). */
  clipBuffer: LiveClipBuffer;
  assetsDir: string;
  assetObjects: RecordingStore;
  paths: { hlsDir: string; recordingsDir: string; recordings: RecordingStore; liveBufferDir: string };
}

/** Clips (src/assets): assets cut from a live window or a recording by a queue job. */
export function wireClips({ config, log }: Wiring, store: Store, { queue }: EventsArea, { recordingsDir, objects }: RecordingsArea, hlsDir: string, publicUrl: () => string): ClipsArea {
  const assetsDir = path.join(config.dataDir, "assets");
  const assetObjects: RecordingStore = config.s3
    ? new S3RecordingStore(s3Client(config.s3), config.s3.bucket, (id) => path.join(assetsDir, id), log, undefined, (id) => `assets/${id}/`)
    : new LocalRecordingStore();
  const clipBuffer = new LiveClipBuffer(path.join(assetsDir, "live"), config.clipWindowSeconds);
  clipBuffer.reset();
  const paths = { hlsDir, recordingsDir, recordings: objects, liveBufferDir: clipBuffer.dir };
  const clips = new ClipService({
    ...paths,
    store,
    assetsDir,
    assetObjects,
    publicUrl,
    maxClipSeconds: config.maxClipSeconds,
    caps: { maxAssets: config.limits.maxAssetsPerUser, maxBytes: config.limits.maxClipBytesPerUser },
    minFreeBytes: config.storageMinFreeBytes,
    enqueue: (job, within) => queue.enqueue<ClipJob>(CLIP_QUEUE, job, within),
  });
  queue.expect(CLIP_QUEUE, async () => (await clips.assets.listUnfinished(1_000)).map(clipJob));
  return { clips, clipBuffer, assetsDir, assetObjects, paths };
}

/** The clip worker (worker nodes), once PUBLIC_URL is known: asset.ready carries the asset's URLs. At the stop, an ffmpeg running is stopped, its job runs again after the restart. */
export function startClipping({ config, log, stops, has }: Wiring, store: Store, { events, queue }: EventsArea, { processes, ffmpeg }: MediaArea, area: ClipsArea, publicUrl: () => string): void {
  const maker = new ClipMaker({ ...area.paths, store, events, log, registry: processes, ffmpegPath: ffmpeg?.path, assetsDir: area.assetsDir, objects: area.assetObjects, publicUrl, minFreeBytes: config.storageMinFreeBytes });
  const worker = has("worker") ? queue.process<ClipJob>(CLIP_QUEUE, maker.handle, { concurrency: 1 }) : undefined;
  stops.register("intake", "clip worker", async () => {
    const closed = worker?.close();
    maker.interrupt();
    await closed;
  });
}
