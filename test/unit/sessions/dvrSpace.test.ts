import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { DvrSpace, ENDED_WINDOW_KEEP_MS, type DvrSession } from "../../../src/sessions/dvrSpace";
import type { LiveSessionInfo } from "../../../src/sessions/observer";

const MB = 1024 * 1024;
const log = pino({ level: "silent" });

/** A session's info as the runtime gives it, with a folder whose top playlist names its segments. */
function info(hlsDir: string, playbackId: string, sessionId: string, dvrSeconds: number, record = false): LiveSessionInfo {
  const dir = path.join(hlsDir, playbackId);
  fs.mkdirSync(path.join(dir, "0"), { recursive: true });
  fs.writeFileSync(path.join(dir, "0", "index.m3u8"), `#EXTM3U\n#EXTINF:2,\n${sessionId.slice(0, 8)}_1.m4s\n#EXT-X-ENDLIST\n`);
  fs.writeFileSync(path.join(dir, "0", `${sessionId.slice(0, 8)}_1.m4s`), "media");
  return { streamId: `s-${playbackId}`, sessionId, userId: "u", playbackId, hlsDir: dir, renditions: [], dvrSeconds, source: { name: "x", feed: () => () => undefined }, sourceCodec: () => undefined, record, log, leaseLost: () => false };
}

function session(i: LiveSessionInfo, listed: number, bytesPerSecond: number) {
  const s = { info: i, window: i.dvrSeconds, issue: undefined as string | undefined, dvrFootprint: () => ({ window: s.window, listed, bytesPerSecond }), setDvrWindow: (w: number, issue: string | undefined) => ((s.window = w), (s.issue = issue)) };
  return s satisfies DvrSession;
}

describe("DvrSpace", () => {
  let hlsDir: string;
  let space: DvrSpace | undefined;
  beforeEach(() => (hlsDir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-dvrspace-"))));
  afterEach(() => {
    space?.stop();
    fs.rmSync(hlsDir, { recursive: true, force: true });
  });

  it("cuts a live window the disk cannot hold, says why, and gives it back when room returns", () => {
    let free = 100 * MB + 30 * MB + 64 * MB; // 30 s of slack at 1 MiB/s above the 64 MiB kept
    const s = session(info(hlsDir, "aaaa", "11111111-a", 7200), 60, MB);
    space = new DvrSpace({ hlsDir, keepFreeBytes: 64 * MB, sessions: () => [s], log, everyMs: 60_000, freeBytes: () => free });
    space.check();
    expect(s.window).toBe(160);
    expect(s.issue).toMatch(/^DVR window cut to 160 s of the 7200 s asked: the data directory has 194 MiB free/);
    free = 100_000 * MB;
    space.check();
    expect(s.window).toBe(7200);
    expect(s.issue).toBeUndefined();
  });

  it("deletes an ended window once its time is over, not before, and leaves live ones alone", async () => {
    let now = 1_000_000;
    const ended = info(hlsDir, "bbbb", "22222222-b", 120);
    const kept = info(hlsDir, "cccc", "33333333-c", 7200);
    space = new DvrSpace({ hlsDir, keepFreeBytes: 0, sessions: () => [], log, everyMs: 60_000, freeBytes: () => 1e12, now: () => now });
    space.sessionEnded(ended);
    space.sessionEnded(kept);
    now += 119_000;
    space.check();
    expect(fs.existsSync(ended.hlsDir)).toBe(true);
    now += 1000;
    space.check();
    expect(fs.existsSync(ended.hlsDir)).toBe(false);
    expect(fs.existsSync(kept.hlsDir)).toBe(true);
    now += ENDED_WINDOW_KEEP_MS;
    space.check();
    expect(fs.existsSync(kept.hlsDir)).toBe(false);
    // The renamed folders are deleted off the event loop.
    for (let i = 0; i < 100 && fs.readdirSync(hlsDir).length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(fs.readdirSync(hlsDir)).toEqual([]);
  });

  it("keeps a folder the stream's next session has taken", () => {
    let now = 0;
    const first = info(hlsDir, "dddd", "44444444-d", 60);
    space = new DvrSpace({ hlsDir, keepFreeBytes: 0, sessions: () => [], log, everyMs: 60_000, freeBytes: () => 1e12, now: () => now });
    space.sessionEnded(first);
    // The next session rewrote the folder without telling (it went live on another path first).
    info(hlsDir, "dddd", "55555555-d", 60);
    now += 61_000;
    space.check();
    expect(fs.existsSync(path.join(hlsDir, "dddd", "0", "55555555_1.m4s"))).toBe(true);
  });

  it("deletes ended windows (oldest first) only when the disk is short of what the windows hold, counting what that frees", () => {
    const keep = 64 * MB + 30 * MB; // what is kept, and 30 s of slack at 1 MiB/s
    let free = 10_000 * MB;
    const older = session(info(hlsDir, "eeee", "66666666-e", 7200), 100, MB);
    const newer = session(info(hlsDir, "gggg", "88888888-g", 7200), 100, MB);
    const s = session(info(hlsDir, "ffff", "77777777-f", 600), 100, MB);
    let live: DvrSession[] = [older, newer, s];
    space = new DvrSpace({ hlsDir, keepFreeBytes: 64 * MB, sessions: () => live, log, everyMs: 60_000, freeBytes: () => free });
    // Seen live, holding 100 MiB each; then they end.
    space.check();
    live = [s];
    space.sessionEnded(older.info);
    space.sessionEnded(newer.info);
    // Room for less than the live window wants: it stops growing, the ended windows stay.
    free = keep + 50 * MB;
    space.check();
    expect(s.window).toBe(150);
    expect(fs.existsSync(older.info.hlsDir) && fs.existsSync(newer.info.hlsDir)).toBe(true);
    // 40 MiB short of what is held: the older ended window goes (100 MiB), and that is enough.
    free = keep - 40 * MB;
    space.check();
    expect(fs.existsSync(older.info.hlsDir)).toBe(false);
    expect(fs.existsSync(newer.info.hlsDir)).toBe(true);
    expect(s.window).toBe(160);
    expect(s.issue).toMatch(/^DVR window cut to 160 s of the 600 s asked/);
  });

  it("leaves recorded sessions' windows whole: their recording holds the same files", () => {
    const s = session(info(hlsDir, "hhhh", "99999999-h", 7200, true), 100, MB);
    space = new DvrSpace({ hlsDir, keepFreeBytes: 64 * MB, sessions: () => [s], log, everyMs: 60_000, freeBytes: () => 0 });
    space.check();
    expect(s.window).toBe(7200);
    expect(s.issue).toBeUndefined();
  });

  it("finds at start what a stopped node left: windows being deleted go, ended DVR windows keep their time, others stay", async () => {
    const write = (id: string, segments: number, ended: boolean) => {
      fs.mkdirSync(path.join(hlsDir, id, "0"), { recursive: true });
      const lines = Array.from({ length: segments }, (_, i) => `#EXTINF:2.000,\nabcd1234_${i + 1}.m4s`);
      fs.writeFileSync(path.join(hlsDir, id, "0", "index.m3u8"), ["#EXTM3U", ...lines, ...(ended ? ["#EXT-X-ENDLIST"] : [])].join("\n") + "\n");
      fs.writeFileSync(path.join(hlsDir, id, "0", "abcd1234_1.m4s"), Buffer.alloc(1000));
    };
    write("aaaaaaaaaaaaaaaa", 40, true); // 80 s: an ended DVR window
    write("bbbbbbbbbbbbbbbb", 6, true); // a window without DVR
    write("cccccccccccccccc", 40, false); // not ended (a session that crashed: its orphan is ended by the manager)
    fs.mkdirSync(path.join(hlsDir, "dddddddddddddddd.dropping-abcd1234", "0"), { recursive: true });
    let now = Date.now();
    space = new DvrSpace({ hlsDir, keepFreeBytes: 0, sessions: () => [], log, everyMs: 60_000, freeBytes: () => 1e12, now: () => now });
    space.check();
    expect(fs.existsSync(path.join(hlsDir, "aaaaaaaaaaaaaaaa"))).toBe(true);
    now += 81_000;
    space.check();
    for (let i = 0; i < 100 && fs.readdirSync(hlsDir).length > 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(fs.readdirSync(hlsDir).sort()).toEqual(["bbbbbbbbbbbbbbbb", "cccccccccccccccc"]);
  });
});
