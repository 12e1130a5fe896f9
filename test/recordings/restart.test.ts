import { dropTestDatabase, openTestStore, testDatabaseEnv } from "../helpers/database";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { openStore } from "../../src/db";
import { createLogger } from "../../src/log";
import { locateFfmpeg, ProcessRegistry } from "../../src/media";
import { RecordingFinalizer, FINALIZE_ATTEMPTS } from "../../src/recordings";
import { RetryLater } from "../../src/queue";
import { ffmpegPidsMentioning, probe, pushTestStream, waitFor } from "../helpers/media";
import { apiClient, startTestServer, tempDir } from "../helpers/server";

const ROOT = path.resolve(__dirname, "../..");

describe("recordings across crashes and failures", () => {
  it("a server killed mid-recording finalizes what was captured after the next start", async () => {
    const dataDir = tempDir();
    const port = 21000 + Math.floor(Math.random() * 20000);
    // One NODE_ID for both runs: the restart knows the killed run's session for its own and ends it at once.
    const node = { NODE_ID: `restart-${process.pid}` };
    const env = { ...process.env, ...(await testDatabaseEnv(dataDir)), ...node, DATA_DIR: dataDir, PORT: String(port), RTMP_PORT: String(port + 1), HOST: "127.0.0.1", LOG_LEVEL: "warn", HLS_SEGMENT_SECONDS: "1" };
    const server = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "inherit"] });
    let banner = "";
    server.stdout!.on("data", (c: Buffer) => (banner += c.toString()));
    const key = await waitFor("the banner", () => /API key:\s+(\S+)/.exec(banner)?.[1], 30_000);
    const api = apiClient(`http://127.0.0.1:${port}/api`, key);
    const s = (await api("POST", "/stream", { name: "crash", record: true })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${port + 1}/live/${s.streamKey}`, { seconds: 30 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
    await waitFor("3 s recorded", async () => (await api("GET", `/stream/${s.id}`)).body.sourceSegmentsDuration >= 3, 10_000);

    server.kill("SIGKILL");
    await new Promise((r) => server.once("exit", r));
    await push.exited;

    const again = await startTestServer({ HLS_SEGMENT_SECONDS: "1", ...node }, { dataDir });
    try {
      const api2 = apiClient(again.apiUrl, again.key);
      const session = await waitFor(
        "ready or failed",
        async () => {
          const [x] = (await api2("GET", `/stream/${s.id}/sessions?record=1`)).body;
          return x && ["ready", "failed"].includes(x.recordingStatus) ? x : undefined;
        },
        30_000,
      );
      expect(session.recordingStatus).toBe("ready");
      const mp4 = await probe(session.mp4Url);
      expect(mp4.duration).toBeGreaterThanOrEqual(2.5);
      expect((await api2("GET", `/stream/${s.id}`)).body.isActive).toBe(false);
      // The killed server's pipeline lost its RTMP source with it and exited on its own.
      await waitFor("no ffmpeg of the killed server", () => ffmpegPidsMentioning(dataDir).length === 0, 10_000);
    } finally {
      await again.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("a remux that keeps failing is retried, then marked failed with the reason", async () => {
    const dir = tempDir();
    const store = await openTestStore(dir);
    try {
      const user = await store.users.getOrCreate("u");
      const stream = await store.streams.create({ userId: user.id, name: "broken", profiles: [], record: true, playbackPolicy: null });
      const session = await store.sessions.start(stream);
      await store.sessions.end(session.id);
      await store.sessions.setRecordingStatus(session.id, "waiting");
      // A recording whose only segment is not media at all.
      const variant = path.join(dir, "recordings", session.id, "0");
      fs.mkdirSync(variant, { recursive: true });
      fs.writeFileSync(path.join(variant, "a_00000.ts"), "this is not MPEG-TS");
      fs.writeFileSync(path.join(variant, "index.m3u8"), "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\na_00000.ts\n");

      const raised: string[] = [];
      const { handle } = new RecordingFinalizer({
        store,
        events: { raise: async (name) => void raised.push(name) },
        log: createLogger("silent"),
        registry: new ProcessRegistry(),
        ffmpegPath: locateFfmpeg(process.env.FFMPEG_PATH)!.path,
        recordingsDir: path.join(dir, "recordings"),
        links: () => ({ publicUrl: "http://localhost", sign: () => "sig" }),
      });
      for (let attempt = 1; attempt < FINALIZE_ATTEMPTS; attempt++) {
        await expect(handle({ id: "j", queue: "q", data: { sessionId: session.id }, attempt })).rejects.toBeInstanceOf(RetryLater);
        expect((await store.sessions.get(session.id))?.recordingStatus).toBe("waiting");
      }
      await handle({ id: "j", queue: "q", data: { sessionId: session.id }, attempt: FINALIZE_ATTEMPTS });
      const failed = (await store.sessions.get(session.id))!;
      expect(failed.recordingStatus).toBe("failed");
      expect(failed.recordingError).toMatch(/MP4 remux failed/);
      expect(raised).toEqual([]);
      expect(fs.existsSync(path.join(dir, "recordings", session.id, "output.mp4"))).toBe(false);
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
      await dropTestDatabase(dir);
    }
  });
});
