import fs from "node:fs";
import path from "node:path";
import { dropTestDatabase, openTestStore } from "../helpers/database";
import { ffmpegPidsMentioning, pushTestStream, waitFor } from "../helpers/media";
import { apiClient, startTestServer, tempDir } from "../helpers/server";

const ENV = { HLS_SEGMENT_SECONDS: "1" };

describe("server lifecycle with live sessions", () => {
  it("stopping the server mid-stream ends the session cleanly and leaves no ffmpeg behind", async () => {
    const dataDir = tempDir();
    const t = await startTestServer(ENV, { dataDir });
    const api = apiClient(t.apiUrl, t.key);
    const s = (await api("POST", "/stream", { name: "shutdown", profiles: [{ name: "90p", bitrate: 100_000, fps: 15, width: 160, height: 90 }] })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 30 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
    expect(ffmpegPidsMentioning(dataDir)).toHaveLength(1);

    await t.stop();
    expect(ffmpegPidsMentioning(dataDir)).toEqual([]);
    expect(t.server.processes.size).toBe(0);
    const pushEnd = await push.exited;
    expect(pushEnd.code).not.toBe(0);

    // State is consistent on disk: nothing active, the session closed, the playlist ended.
    const db = await openTestStore(dataDir);
    expect(await db.db.get("SELECT COUNT(*) AS n FROM streams WHERE is_active = 1")).toEqual({ n: 0 });
    expect(await db.db.get("SELECT COUNT(*) AS n FROM sessions WHERE ended_at IS NULL")).toEqual({ n: 0 });
    await db.close();
    const playlist = fs.readFileSync(path.join(dataDir, "hls", s.playbackId, "0", "index.m3u8"), "utf8");
    expect(playlist).toMatch(/#EXT-X-ENDLIST\s*$/);
    fs.rmSync(dataDir, { recursive: true, force: true });
    await dropTestDatabase(dataDir);
  });

  it("at start, closes what a previous run that died left active", async () => {
    const dataDir = tempDir();
    const first = await startTestServer(ENV, { dataDir });
    const store = first.server.store;
    const api = apiClient(first.apiUrl, first.key);
    const s = (await api("POST", "/stream", { name: "crashed" })).body;
    // What a run killed mid-session leaves behind: an open session, both streams active,
    // and a live playlist without its end.
    const session = await store.sessions.start((await store.streams.get(s.id))!);
    await store.streams.setActive([s.id, session.id], true);
    const variant = path.join(dataDir, "hls", s.playbackId, "0");
    fs.mkdirSync(variant, { recursive: true });
    fs.writeFileSync(path.join(variant, "index.m3u8"), "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:1.0,\na_00000.ts\n");
    fs.writeFileSync(path.join(dataDir, "hls", s.playbackId, "index.m3u8"), "#EXTM3U\n");
    await first.stop();
    // first.stop() found no live session of its own to end: the rows stay as a crash left them.
    const raw = await openTestStore(dataDir);
    await raw.db.run("UPDATE streams SET is_active = 1 WHERE id IN (?, ?)", [s.id, session.id]);
    await raw.close();

    const second = await startTestServer(ENV, { dataDir });
    const api2 = apiClient(second.apiUrl, second.key);
    expect((await api2("GET", `/stream/${s.id}`)).body.isActive).toBe(false);
    const [closed] = (await api2("GET", `/stream/${s.id}/sessions`)).body;
    expect(closed).toMatchObject({ id: session.id, isActive: false });
    expect(fs.readFileSync(path.join(variant, "index.m3u8"), "utf8")).toMatch(/#EXT-X-ENDLIST\s*$/);
    await second.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    await dropTestDatabase(dataDir);
  });
});
