import { openTestStore } from "../helpers/database";
import fs from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import type { Store } from "../../src/db";
import { FINALIZE_ATTEMPTS } from "../../src/recordings";
import { pushTestStream, waitFor } from "../helpers/media";
import { endedRecordedSession, finalizeJobRow, makeClip, writeRecording } from "../helpers/recordingFiles";
import { apiClient, startTestServer, tempDir } from "../helpers/server";
import { deleteKeys, REDIS_URL, uniquePrefix } from "../queue/redis";

// Shutdowns and recording finalize: a graceful stop is not the recording's fault, so it costs no
// attempt, however many times it lands on the same remux; and finalize stops taking jobs before
// the live sessions end, so the jobs their ends create wait for the next start.

const MiB = 1024 * 1024;

/** Reads the data directory's database while no server runs. */
async function readStopped<T>(dataDir: string, read: (store: Store) => Promise<T>): Promise<T> {
  const store = await openTestStore(dataDir);
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it("a shutdown during the remux does not use up an attempt, however often it happens", async () => {
  const work = tempDir("onair-finalize-stop-");
  try {
    const clip = path.join(work, "clip.ts");
    await makeClip(clip);
    const dataDir = path.join(work, "data");
    fs.mkdirSync(dataDir);
    const { sessionId } = await readStopped(dataDir, (s) => endedRecordedSession(s));
    const recordingDir = path.join(dataDir, "recordings", sessionId);
    await writeRecording(recordingDir, clip, 300 * MiB);

    // More shutdowns than a recording has attempts: each used to cost one.
    for (let stop = 1; stop <= FINALIZE_ATTEMPTS + 1; stop++) {
      const t = await startTestServer({}, { dataDir });
      const remux = await waitFor("the remux", () => t.server.processes.pids()[0], 30_000, 2);
      // Held mid-remux: the shutdown lands during it, however fast this machine remuxes.
      process.kill(remux, "SIGSTOP");
      const t0 = Date.now();
      await t.stop();
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(alive(remux)).toBe(false);
      await readStopped(dataDir, async (s) => {
        expect((await s.sessions.get(sessionId))?.recordingStatus).toBe("waiting");
        expect(await finalizeJobRow(s, sessionId)).toMatchObject({ state: "waiting", attempts: 0, last_error: "the MP4 remux was interrupted by the server's shutdown" });
      });
      expect(fs.readdirSync(recordingDir).filter((f) => f.startsWith("output.mp4"))).toEqual([]);
    }

    const t = await startTestServer({}, { dataDir });
    try {
      await waitFor("ready", async () => (await t.server.store.sessions.get(sessionId))?.recordingStatus === "ready", 60_000);
      expect(await finalizeJobRow(t.server.store, sessionId)).toMatchObject({ state: "done", attempts: 1 });
    } finally {
      await t.stop();
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}, 180_000);

it("with REDIS_URL too: BullMQ delays the interrupted job without counting its attempt", async () => {
  const work = tempDir("onair-finalize-stop-redis-");
  const prefix = uniquePrefix("finalize-stop");
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    const clip = path.join(work, "clip.ts");
    await makeClip(clip);
    const dataDir = path.join(work, "data");
    fs.mkdirSync(dataDir);
    const { sessionId } = await readStopped(dataDir, (s) => endedRecordedSession(s));
    await writeRecording(path.join(dataDir, "recordings", sessionId), clip, 300 * MiB);
    const env = { REDIS_URL, REDIS_PREFIX: prefix };
    const jobKey = `${prefix}:recording-finalize:finalize-${sessionId}`;

    for (let stop = 1; stop <= FINALIZE_ATTEMPTS; stop++) {
      const t = await startTestServer(env, { dataDir });
      const remux = await waitFor("the remux", () => t.server.processes.pids()[0], 30_000, 2);
      process.kill(remux, "SIGSTOP");
      await t.stop();
      expect(alive(remux)).toBe(false);
      expect(await redis.zscore(`${prefix}:recording-finalize:delayed`, `finalize-${sessionId}`)).not.toBeNull();
      // Failed runs ("atm") and stalled ones ("stc") are what count: neither moved.
      expect(await redis.hmget(jobKey, "atm", "stc")).toEqual([null, null]);
    }

    const t = await startTestServer(env, { dataDir });
    try {
      await waitFor("ready", async () => (await t.server.store.sessions.get(sessionId))?.recordingStatus === "ready", 60_000);
      // Finished by its first counted run.
      expect(await redis.hget(jobKey, "atm")).toBe("1");
    } finally {
      await t.stop();
    }
  } finally {
    await deleteKeys(prefix);
    redis.disconnect();
    fs.rmSync(work, { recursive: true, force: true });
  }
}, 180_000);

it("finalize stops taking jobs before the shutdown ends live sessions: theirs run after the restart, as attempt 1", async () => {
  const dataDir = tempDir("onair-finalize-stop-live-");
  const t = await startTestServer({ HLS_SEGMENT_SECONDS: "1" }, { dataDir });
  const api = apiClient(t.apiUrl, t.key);
  const s = (await api("POST", "/stream", { name: "live at shutdown", record: true })).body;
  const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 60 });
  try {
    await waitFor("3 s recorded", async () => (await api("GET", `/stream/${s.id}`)).body.sourceSegmentsDuration >= 3, 20_000);
    const [live] = (await api("GET", `/stream/${s.id}/sessions`)).body;
    await t.stop();

    // The session's end enqueued its finalize, which nothing took during the shutdown.
    await readStopped(dataDir, async (store) => {
      expect((await store.sessions.get(live.id))?.recordingStatus).toBe("waiting");
      expect(await finalizeJobRow(store, live.id)).toMatchObject({ state: "waiting", attempts: 0 });
    });
    expect(fs.existsSync(path.join(dataDir, "recordings", live.id, "output.mp4"))).toBe(false);

    const again = await startTestServer({}, { dataDir });
    try {
      await waitFor("ready", async () => (await again.server.store.sessions.get(live.id))?.recordingStatus === "ready", 30_000);
      expect(await finalizeJobRow(again.server.store, live.id)).toMatchObject({ state: "done", attempts: 1 });
    } finally {
      await again.stop();
    }
  } finally {
    push.child.kill("SIGKILL");
    await push.exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}, 120_000);
