import { TEST_DATABASE_URL } from "../helpers/database";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pushTestStream, waitFor } from "../helpers/media";
import { tempDir } from "../helpers/server";
import { startWatchedServer, type WatchedServer } from "../helpers/watched";

// Real storage faults, as root (CI and the development machines run tests as root): a small
// tmpfs that really fills up, and `chattr +i`, which refuses writes even to root.

const MiB = 1024 * 1024;
const EVENTS = ["stream.started", "stream.idle", "recording.ready"];

function freeBytes(dir: string): number {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
}

/** Fills the file system to its last block, whatever the live ffmpeg writes or deletes meanwhile. */
function fillUp(file: string): void {
  const fd = fs.openSync(file, "a");
  const chunk = Buffer.alloc(MiB);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
  } finally {
    fs.closeSync(fd);
  }
  const rest = Buffer.alloc(4096);
  const small = fs.openSync(file, "a");
  try {
    for (;;) fs.writeSync(small, rest);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
  } finally {
    fs.closeSync(small);
  }
}

async function readyz(w: WatchedServer) {
  const res = await fetch(`${w.t.server.adminUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as { checks: { storage: string } } };
}

async function goLive(w: WatchedServer, record: boolean) {
  const { api, t } = w;
  const s = (await api("POST", "/stream", { name: "storage fault", record })).body;
  const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 60 });
  await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
  return { s, push };
}

describe("storage faults", () => {
  it("a data directory that fills up ends the live session with the reason; reads go on; /readyz says so; room brings publishes back", async () => {
    const dataDir = tempDir();
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64m", "tmpfs", dataDir]);
    let w: WatchedServer | undefined;
    try {
      w = await startWatchedServer({ HLS_SEGMENT_SECONDS: "1", STORAGE_MIN_FREE_MB: "16" }, EVENTS, { dataDir });
      const { api, t } = w;
      const { s, push } = await goLive(w, true);
      expect((await readyz(w)).status).toBe(200);

      // Leave 8 MiB: under the 16 MiB the server keeps for SQLite, finalize and the next segments.
      const filler = path.join(dataDir, "filler");
      fs.writeFileSync(filler, Buffer.alloc(freeBytes(dataDir) - 8 * MiB));
      await waitFor("the session to end", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive, 10_000);
      const pushed = await push.exited;
      expect(pushed.afterMs).toBeLessThan(30_000); // the publisher was disconnected, not left to finish

      const [session] = (await api("GET", `/stream/${s.id}/sessions`)).body;
      expect(session.isActive).toBe(false);
      expect(session.endReason).toMatch(/^storage unavailable: only \d+ MiB free on the data directory \(at least 16 MiB needed\)$/);
      // Readiness is reused for 1.5 s: the next answers say it.
      const r = await waitFor("/readyz 503", async () => {
        const x = await readyz(w!);
        return x.status === 503 ? x : undefined;
      }, 5000);
      expect(r.body.checks.storage).toMatch(/MiB free/);
      expect((await api("GET", "/stream")).status).toBe(200);
      await waitFor("stream.idle", () => w!.eventsOf(s.id).includes("stream.idle"), 10_000);
      expect(w.eventsOf(s.id).filter((e) => e.startsWith("stream."))).toEqual(["stream.started", "stream.idle"]);
      // What was captured is kept and finalized in the room left.
      await waitFor("recording.ready", () => w!.eventsOf(s.id).includes("recording.ready"), 30_000);

      // A publish while the disk is full is refused at once.
      const refused = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 20 });
      expect((await refused.exited).afterMs).toBeLessThan(10_000);
      expect((await api("GET", `/stream/${s.id}/sessions`)).body).toHaveLength(1);

      fs.rmSync(filler);
      await waitFor("/readyz ok", async () => (await readyz(w!)).status === 200, 10_000);
      const again = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 3 });
      await waitFor("isActive again", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
      expect((await again.exited).code).toBe(0);
      await waitFor("every ffmpeg reaped", () => t.server.processes.size === 0, 10_000);
    } finally {
      await w?.stop();
      execFileSync("umount", ["-l", dataDir]);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("a disk filled to the last byte at once: the held-back reserve lets the end be recorded; nothing crashes", async () => {
    const dataDir = tempDir();
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64m", "tmpfs", dataDir]);
    let w: WatchedServer | undefined;
    try {
      // No free-space threshold: only the write probe and ffmpeg's own failure can notice.
      w = await startWatchedServer({ HLS_SEGMENT_SECONDS: "1", STORAGE_MIN_FREE_MB: "0" }, EVENTS, { dataDir });
      const { api } = w;
      expect(fs.statSync(path.join(dataDir, "storage-reserve")).size).toBe(16 * MiB);
      const { s, push } = await goLive(w, false);
      const filler = path.join(dataDir, "filler");
      fillUp(filler);
      expect(freeBytes(dataDir)).toBeLessThan(64 * 1024);

      await waitFor("the session to end", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive, 10_000);
      await push.exited;
      const [session] = (await api("GET", `/stream/${s.id}/sessions`)).body;
      expect(session.isActive).toBe(false);
      expect(session.endReason).toMatch(/^storage unavailable: cannot write to .*hls: ENOSPC$/);
      await waitFor("stream.idle", () => w!.eventsOf(s.id).includes("stream.idle"), 10_000);
      expect(w.eventsOf(s.id)).toEqual(["stream.started", "stream.idle"]);
      expect(fs.existsSync(path.join(dataDir, "storage-reserve"))).toBe(false);
      // Fill the released reserve too: the API still reads, and a write it cannot make is a
      // 503 to retry later, not a 500. With state on PostgreSQL the database is not on this
      // disk: the API writes on.
      const more = path.join(dataDir, "more");
      fillUp(more);
      expect((await api("GET", `/stream/${s.id}`)).status).toBe(200);
      let created = await api("POST", "/stream", { name: "during a full disk" });
      for (let i = 0; created.status === 201 && i < 50; i++) created = await api("POST", "/stream", { name: "x".repeat(500) });
      if (TEST_DATABASE_URL) {
        expect(created.status).toBe(201);
      } else {
        expect(created.status).toBe(503);
        expect(created.body.errors[0]).toMatch(/^storage unavailable/);
        expect(created.headers.get("retry-after")).toBe("30");
      }

      fs.rmSync(filler);
      fs.rmSync(more);
      await waitFor("/readyz ok", async () => (await readyz(w!)).status === 200, 10_000);
      expect(fs.statSync(path.join(dataDir, "storage-reserve")).size).toBe(16 * MiB);
    } finally {
      await w?.stop();
      execFileSync("umount", ["-l", dataDir]);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("live segments that leave the playlist stay for its duration plus one, then are deleted from disk", async () => {
    const w = await startWatchedServer({ HLS_SEGMENT_SECONDS: "1", HLS_LIST_SIZE: "3" }, EVENTS);
    try {
      const { api, t } = w;
      // Transcoded: 1 s segments on a 1 s target duration (a passthrough's is longer, and so its window).
      const s = (await api("POST", "/stream", { name: "window", profiles: [{ name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 }] })).body;
      const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 14 });
      await waitFor("11 segments written", async () => (await api("GET", `/stream/${s.id}`)).body.sourceSegments >= 11, 25_000);
      const dir = path.join(t.dataDir, "hls", s.playbackId, "0");
      const segment = /_(\d+)\.m4s$/;
      const onDisk = fs.readdirSync(dir).filter((f) => segment.test(f));
      // The 3 listed and the 5 that left it (RFC 8216 §6.2.2: 3 s of playlist + 1 s, and a
      // segment more in case one was short).
      expect(onDisk.length).toBeLessThanOrEqual(8);
      const listed = fs.readFileSync(path.join(dir, "index.m3u8"), "utf8").split("\n").filter((l) => segment.test(l) && !l.startsWith("#"));
      expect(listed).toHaveLength(3);
      for (const f of listed) expect(onDisk).toContain(f);
      const nth = (n: number) => listed[0]!.replace(segment, `_${n}.m4s`);
      const firstListed = Number(segment.exec(listed[0]!)![1]);
      // The segments that just left the playlist are still served (from memory and from disk);
      // the first one is gone.
      for (const n of [firstListed - 1, firstListed - 4]) {
        expect([n, (await fetch(`${t.server.publicUrl}/hls/${s.playbackId}/0/${nth(n)}`)).status]).toEqual([n, 200]);
        expect(onDisk).toContain(nth(n));
      }
      expect(onDisk).not.toContain(nth(firstListed - 6));
      await push.exited;
    } finally {
      await w.stop();
    }
  });

  it("a data directory that refuses writes ends the live session with the reason", async () => {
    const w = await startWatchedServer({ HLS_SEGMENT_SECONDS: "1" }, EVENTS);
    const hlsDir = path.join(w.t.dataDir, "hls");
    let locked: string[] = [];
    try {
      const { api } = w;
      const { s, push } = await goLive(w, false);
      // The data directory itself too: its reserve file cannot be deleted either (logged).
      locked = [w.t.dataDir, hlsDir, path.join(hlsDir, s.playbackId)];
      execFileSync("chattr", ["+i", ...locked]);
      await waitFor("the session to end", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive, 10_000);
      await push.exited;
      const [session] = (await api("GET", `/stream/${s.id}/sessions`)).body;
      expect(session.endReason).toMatch(/^storage unavailable: cannot write to .*hls: EPERM$/);
      await waitFor("/readyz naming EPERM", async () => /EPERM/.test((await readyz(w)).body.checks.storage), 5000);
      await waitFor("stream.idle", () => w.eventsOf(s.id).includes("stream.idle"), 10_000);
      expect(w.eventsOf(s.id)).toEqual(["stream.started", "stream.idle"]);

      execFileSync("chattr", ["-i", ...locked]);
      locked = [];
      await waitFor("/readyz ok", async () => (await readyz(w)).status === 200, 10_000);
      expect(w.t.server.processes.size).toBe(0);
    } finally {
      if (locked.length) execFileSync("chattr", ["-i", ...locked]);
      await w.stop();
    }
  });
});
