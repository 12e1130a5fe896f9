import { openTestStore } from "../helpers/database";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openStore } from "../../src/db";
import { probe, waitFor } from "../helpers/media";
import { endedRecordedSession, finalizeJobRow, freeBytes, makeClip, writeRecording } from "../helpers/recordingFiles";
import { apiClient, startTestServer, tempDir } from "../helpers/server";

// A 2 GiB recording finalized by a real server. Finalize once killed every remux after a fixed
// 50 s (about 3 h of 720p); now only a remux that stops moving is killed. Here the no-progress
// limit is 3 s (FINALIZE_STALL_SECONDS) and the remux is held three times for 2 s: it runs
// well over twice the limit and must still finish, as attempt 1, with its job's lease renewed
// meanwhile. Disk: about 2.1 GiB of segments and 2.1 GiB of MP4, removed afterwards.

const GiB = 1024 ** 3;
const STALL_SECONDS = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A file's size and modification time, as the remux's watchdog reads them; "" before it exists. */
function fileState(file: string): string {
  try {
    const st = fs.statSync(file);
    return `${st.size}:${st.mtimeMs}`;
  } catch {
    return "";
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it("a 2 GiB recording finalizes ready, with an MP4 of its duration, however long its remux runs", async () => {
  const work = tempDir("onair-2gib-");
  try {
    const free = freeBytes(work);
    if (free < 6 * GiB) throw new Error(`this test needs 6 GiB free in ${os.tmpdir()}; there are ${(free / GiB).toFixed(1)} GiB`);
    const clip = path.join(work, "clip.ts");
    await makeClip(clip);
    const dataDir = path.join(work, "data");
    fs.mkdirSync(dataDir);
    const setup = await openTestStore(dataDir);
    const { sessionId, streamId } = await endedRecordedSession(setup);
    await setup.close();
    const recording = await writeRecording(path.join(dataDir, "recordings", sessionId), clip, 2 * GiB);
    fs.rmSync(clip);
    expect(recording.bytes).toBeGreaterThanOrEqual(2 * GiB);

    // The next start finalizes the session (a crash's leftover, as far as it knows).
    const t = await startTestServer({ FINALIZE_STALL_SECONDS: String(STALL_SECONDS) }, { dataDir });
    try {
      const remux = await waitFor("the remux", () => t.server.processes.pids()[0], 30_000, 5);
      const tmp = path.join(dataDir, "recordings", sessionId, "output.mp4.tmp");
      const started = Date.now();
      const leaseEnds: number[] = [];
      let holds = 0;
      // Each hold is under the no-progress limit; together they are twice it.
      for (; holds < 3; holds++) {
        try {
          process.kill(remux, "SIGSTOP");
        } catch {
          break; // finished already
        }
        const held = fileState(tmp);
        await sleep(2_000);
        leaseEnds.push((await finalizeJobRow(t.server.store, sessionId))!.run_at);
        expect(leaseEnds.at(-1)!).toBeGreaterThan(Date.now());
        process.kill(remux, "SIGCONT");
        // Held again only once the server can have seen it move (its watchdog looks at the file
        // every 300 ms): two holds around a run it never saw would add up past the limit.
        await waitFor("the remux moving again", () => fileState(tmp) !== held || !isRunning(remux), 10_000, 20);
        await sleep(700);
      }
      await waitFor("ready", async () => (await t.server.store.sessions.get(sessionId))?.recordingStatus === "ready", 180_000, 50);
      const ms = Date.now() - started;
      expect(holds).toBe(3);
      expect(ms).toBeGreaterThan(2 * STALL_SECONDS * 1000);
      // Once, not retried: the pauses were no reason to kill it.
      expect(await finalizeJobRow(t.server.store, sessionId)).toMatchObject({ state: "done", attempts: 1 });
      // The lease always ran ahead of the clock (above), and was pushed on while the remux ran.
      expect(leaseEnds.at(-1)!).toBeGreaterThan(leaseEnds[0]!);

      const api = apiClient(t.apiUrl, await t.keyFor("rec"));
      const [session] = (await api("GET", `/stream/${streamId}/sessions?record=1`)).body;
      expect(session).toMatchObject({ id: sessionId, recordingStatus: "ready" });
      const mp4 = await probe(session.mp4Url);
      expect(Math.abs(mp4.duration - recording.seconds)).toBeLessThan(0.5);
      expect([...new Set(mp4.streams.map((s) => s.codec_type))].sort()).toEqual(["audio", "video"]);
      expect(fs.statSync(path.join(dataDir, "recordings", sessionId, "output.mp4")).size).toBeGreaterThan(0.95 * recording.bytes);
      process.stdout.write(`2 GiB finalize: ${recording.segments} segments, ${(recording.bytes / GiB).toFixed(2)} GiB, ${recording.seconds.toFixed(1)} s of media; ready after ${ms} ms, 6 s of it held\n`);
    } finally {
      await t.stop();
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}, 300_000);
