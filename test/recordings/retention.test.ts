import { dropTestDatabase, openTestStore } from "../helpers/database";
import fs from "node:fs";
import path from "node:path";
import { openStore } from "../../src/db";
import { createLogger } from "../../src/log";
import { retentionCutoff, sweepRecordings } from "../../src/recordings";
import { tempDir } from "../helpers/server";

const DAY = 24 * 3600_000;

describe("recording retention", () => {
  it("keeps forever at 0 days; otherwise expires what ended before now - days", () => {
    expect(retentionCutoff(10 * DAY, 0)).toBeUndefined();
    expect(retentionCutoff(10 * DAY, 3)).toBe(7 * DAY);
  });

  it("deletes the files of expired recordings and marks them deleted; keeps the rest", async () => {
    const dir = tempDir();
    const store = await openTestStore(dir);
    try {
      const user = await store.users.getOrCreate("u");
      const stream = await store.streams.create({ userId: user.id, name: "s", profiles: [], record: true, playbackPolicy: null });
      const now = 100 * DAY;
      const make = async (endedAt: number, status: "ready" | "waiting" | "failed") => {
        const s = await store.sessions.start(stream, endedAt - 60_000);
        await store.sessions.end(s.id, endedAt);
        await store.sessions.setRecordingStatus(s.id, status);
        fs.mkdirSync(path.join(dir, "recordings", s.id), { recursive: true });
        fs.writeFileSync(path.join(dir, "recordings", s.id, "output.mp4"), "mp4");
        return s.id;
      };
      const old = await make(now - 40 * DAY, "ready");
      const oldFailed = await make(now - 31 * DAY, "failed");
      const stuck = await make(now - 40 * DAY, "waiting");
      const recent = await make(now - 2 * DAY, "ready");

      expect(await sweepRecordings(store, path.join(dir, "recordings"), 30, createLogger("silent"), now)).toBe(2);
      for (const id of [old, oldFailed]) {
        expect((await store.sessions.get(id))?.recordingStatus).toBe("deleted");
        expect(fs.existsSync(path.join(dir, "recordings", id))).toBe(false);
      }
      for (const id of [stuck, recent]) expect(fs.existsSync(path.join(dir, "recordings", id, "output.mp4"))).toBe(true);
      expect((await store.sessions.get(recent))?.recordingStatus).toBe("ready");
      // A second sweep finds nothing more to do.
      expect(await sweepRecordings(store, path.join(dir, "recordings"), 30, createLogger("silent"), now)).toBe(0);
      expect(await sweepRecordings(store, path.join(dir, "recordings"), 0, createLogger("silent"), now)).toBe(0);
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
      await dropTestDatabase(dir);
    }
  });
});
