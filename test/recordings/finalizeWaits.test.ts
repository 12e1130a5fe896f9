import { dropTestDatabase, openTestStore } from "../helpers/database";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Writable } from "node:stream";
import { openStore, type Store } from "../../src/db";
import { createLogger } from "../../src/log";
import { locateFfmpeg, ProcessRegistry, type SupervisedProcess } from "../../src/media";
import { openQueue, type JobQueue } from "../../src/queue";
import { FINALIZE_QUEUE, RecordingFinalizer, type FinalizeDeps, type FinalizeJob } from "../../src/recordings";
import { waitFor } from "../helpers/media";
import { endedRecordedSession, finalizeJobRow, makeClip, writeRecording } from "../helpers/recordingFiles";
import { tempDir } from "../helpers/server";

// The finalize job against a real embedded queue, real ffmpeg and a real (small) disk: a disk
// without room for the MP4 delays the job without costing it an attempt, however long; a remux
// that stops moving is stopped and costs one. The recordings folder is a small tmpfs (as root),
// or, elsewhere, the disk with STORAGE_MIN_FREE_MB set above its free space.

const MiB = 1024 * 1024;
const ffmpegPath = locateFfmpeg(process.env.FFMPEG_PATH)!.path;

let work: string;
let clip: string;
beforeAll(async () => {
  work = tempDir("onair-finalize-waits-");
  clip = path.join(work, "clip.ts");
  await makeClip(clip);
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** Log lines as objects, to read what finalize said. */
function capturedLog() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n")) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger("info", sink), lines };
}

/** A registry that does something to each ffmpeg the moment it is spawned. */
class WatchedRegistry extends ProcessRegistry {
  onSpawn: (p: SupervisedProcess) => void = () => {};
  override add(p: SupervisedProcess): void {
    super.add(p);
    this.onSpawn(p);
  }
}

interface Rig {
  store: Store;
  queue: JobQueue;
  sessionId: string;
  recordingsDir: string;
  lines: Record<string, unknown>[];
  registry: WatchedRegistry;
  /** Replaces the finalizer's settings for the runs that follow. */
  use(deps: Partial<FinalizeDeps>): void;
}

async function rig(recordingsDir: string, deps: Partial<FinalizeDeps>, run: (r: Rig) => Promise<void>): Promise<void> {
  const dbDir = tempDir("onair-finalize-db-");
  const store = await openTestStore(dbDir);
  const { log, lines } = capturedLog();
  const queue = await openQueue(store.db, createLogger("silent"), { kind: "embedded" }, { pollMs: 50 });
  const registry = new WatchedRegistry();
  const base: FinalizeDeps = { store, events: { raise: async () => {} }, log, registry, ffmpegPath, recordingsDir, links: () => ({ publicUrl: "http://localhost", sign: () => "sig" }) };
  let finalizer = new RecordingFinalizer({ ...base, ...deps });
  try {
    const { sessionId } = await endedRecordedSession(store);
    await writeRecording(path.join(recordingsDir, sessionId), clip, 1);
    await store.sessions.setRecordingStatus(sessionId, "waiting");
    queue.process<FinalizeJob>(FINALIZE_QUEUE, (job) => finalizer.handle(job), { concurrency: 1 });
    await queue.enqueue<FinalizeJob>(FINALIZE_QUEUE, { id: `finalize-${sessionId}`, data: { sessionId } });
    await run({ store, queue, sessionId, recordingsDir, lines, registry, use: (d) => (finalizer = new RecordingFinalizer({ ...base, ...deps, ...d })) });
  } finally {
    await queue.close({ force: true });
    await registry.stopAll(100);
    await store.close();
    fs.rmSync(dbDir, { recursive: true, force: true });
    await dropTestDatabase(dbDir);
  }
}

/** A tmpfs of `mib` at a fresh folder, as root; undefined where mounting is not allowed. */
function smallDisk(mib: number): { dir: string; resize(mib: number): void; remove(): void } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const dir = tempDir("onair-small-disk-");
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${mib}m`, "tmpfs", dir], { stdio: "pipe" });
  } catch {
    fs.rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  return {
    dir,
    resize: (m) => execFileSync("mount", ["-o", `remount,size=${m}m`, dir], { stdio: "pipe" }),
    remove: () => {
      execFileSync("umount", [dir], { stdio: "pipe" });
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const spaceWaits = (lines: Record<string, unknown>[]) => lines.filter((l) => l.msg === "recording finalize waits for free space; this attempt is not counted");

describe("recording finalize and the disk", () => {
  it("a disk without room for the MP4 delays the finalize, without counting attempts, until there is room", async () => {
    const disk = smallDisk(48);
    // Elsewhere: the same shortfall from STORAGE_MIN_FREE_MB above the disk's free space.
    const recordingsDir = disk?.dir ?? path.join(work, "recordings");
    const short: Partial<FinalizeDeps> = disk ? { minFreeBytes: 0 } : { minFreeBytes: Number.MAX_SAFE_INTEGER };
    try {
      await rig(recordingsDir, { ...short, spaceRetryMs: 100 }, async (r) => {
        // A 30 MiB recording on a 48 MiB disk: its MP4 (about 33 MiB with the margin) does not fit.
        await waitFor("five looks at the disk", () => spaceWaits(r.lines).length >= 5, 20_000);
        expect(spaceWaits(r.lines)[0]).toMatchObject({ reason: expect.stringMatching(/^not enough free space for the MP4: it needs about \d+ MiB/), attempt: 1 });
        // Far more tries than FINALIZE_ATTEMPTS, none counted, nothing failed, no ffmpeg spent.
        expect(new Set(spaceWaits(r.lines).map((l) => l.attempt))).toEqual(new Set([1]));
        expect((await r.store.sessions.get(r.sessionId))?.recordingStatus).toBe("waiting");
        expect(await finalizeJobRow(r.store, r.sessionId)).toMatchObject({ state: "waiting" });
        expect((await finalizeJobRow(r.store, r.sessionId))!.attempts).toBeLessThanOrEqual(1);
        expect(fs.existsSync(path.join(r.recordingsDir, r.sessionId, "output.mp4.tmp"))).toBe(false);

        if (disk) disk.resize(256);
        else r.use({ minFreeBytes: 0, spaceRetryMs: 100 });
        await waitFor("ready", async () => (await r.store.sessions.get(r.sessionId))?.recordingStatus === "ready", 20_000);
        expect(await finalizeJobRow(r.store, r.sessionId)).toMatchObject({ state: "done", attempts: 1 });
        expect(r.lines.find((l) => l.msg === "recording ready")).toMatchObject({ attempt: 1 });
      });
    } finally {
      disk?.remove();
    }
  });

  it("a disk that fills during the remux delays the finalize too, rather than failing it", async () => {
    const disk = smallDisk(128);
    if (!disk) return console.warn("skipped: needs root to mount a tmpfs (a disk that fills mid-remux)");
    try {
      await rig(disk.dir, { minFreeBytes: 0, spaceRetryMs: 200 }, async (r) => {
        const filler = path.join(disk.dir, "filler");
        let paused: SupervisedProcess | undefined;
        // The first remux is held the moment it starts, the disk filled under it, then let go.
        r.registry.onSpawn = (p) => {
          r.registry.onSpawn = () => {};
          paused = p;
          process.kill(p.pid!, "SIGSTOP");
        };
        await waitFor("the remux held", () => paused, 20_000);
        const free = fs.statfsSync(disk.dir);
        fs.writeFileSync(filler, Buffer.alloc(Math.max(0, free.bavail * free.bsize - 2 * MiB)));
        process.kill(paused!.pid!, "SIGCONT");
        await waitFor("a wait for space", () => spaceWaits(r.lines).length >= 1, 20_000);
        expect(spaceWaits(r.lines)[0]!.reason).toMatch(/No space left on device/);
        expect((await r.store.sessions.get(r.sessionId))?.recordingStatus).toBe("waiting");
        fs.rmSync(filler);
        await waitFor("ready", async () => (await r.store.sessions.get(r.sessionId))?.recordingStatus === "ready", 20_000);
        expect(await finalizeJobRow(r.store, r.sessionId)).toMatchObject({ state: "done", attempts: 1 });
      });
    } finally {
      disk.remove();
    }
  });

  it("a remux that stops making progress is stopped after the limit and counts as a failed attempt", async () => {
    await rig(path.join(work, "recordings-stall"), { stallMs: 1_000 }, async (r) => {
      let stuck: SupervisedProcess | undefined;
      // The first remux hangs (as on a dead network mount); the next runs normally.
      r.registry.onSpawn = (p) => {
        r.registry.onSpawn = () => {};
        stuck = p;
        process.kill(p.pid!, "SIGSTOP");
      };
      await waitFor("ready", async () => (await r.store.sessions.get(r.sessionId))?.recordingStatus === "ready", 30_000);
      expect(stuck!.running).toBe(false);
      const failed = r.lines.find((l) => l.msg === "recording finalize failed; will try again");
      expect(failed).toMatchObject({ attempt: 1, reason: "MP4 remux made no progress for 1 s and was stopped" });
      expect(r.lines.find((l) => l.msg === "recording ready")).toMatchObject({ attempt: 2 });
      expect(await finalizeJobRow(r.store, r.sessionId)).toMatchObject({ state: "done", attempts: 2 });
    });
  });
});
