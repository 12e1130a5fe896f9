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

  it("deletes the files of expired recordings and marks them deleted; keeps the rest", () => {
    const dir = tempDir();
    const store = openStore(path.join(dir, "onair.db"));
    try {
      const user = store.users.getOrCreate("u");
      const stream = store.streams.create({ userId: user.id, name: "s", profiles: [], record: true, playbackPolicy: null });
      const now = 100 * DAY;
      const make = (endedAt: number, status: "ready" | "waiting" | "failed") => {
        const s = store.sessions.start(stream, endedAt - 60_000);
        store.sessions.end(s.id, endedAt);
        store.sessions.setRecordingStatus(s.id, status);
        fs.mkdirSync(path.join(dir, "recordings", s.id), { recursive: true });
        fs.writeFileSync(path.join(dir, "recordings", s.id, "output.mp4"), "mp4");
        return s.id;
      };
      const old = make(now - 40 * DAY, "ready");
      const oldFailed = make(now - 31 * DAY, "failed");
      const stuck = make(now - 40 * DAY, "waiting");
      const recent = make(now - 2 * DAY, "ready");

      expect(sweepRecordings(store, path.join(dir, "recordings"), 30, createLogger("silent"), now)).toBe(2);
      for (const id of [old, oldFailed]) {
        expect(store.sessions.get(id)!.recordingStatus).toBe("deleted");
        expect(fs.existsSync(path.join(dir, "recordings", id))).toBe(false);
      }
      for (const id of [stuck, recent]) expect(fs.existsSync(path.join(dir, "recordings", id, "output.mp4"))).toBe(true);
      expect(store.sessions.get(recent)!.recordingStatus).toBe("ready");
      // A second sweep finds nothing more to do.
      expect(sweepRecordings(store, path.join(dir, "recordings"), 30, createLogger("silent"), now)).toBe(0);
      expect(sweepRecordings(store, path.join(dir, "recordings"), 0, createLogger("silent"), now)).toBe(0);
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
