import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { FFMPEG, pushTestStream, waitFor } from "../helpers/media";
import { apiClient, startTestServer, tempDir, useTestServer, type TestServer } from "../helpers/server";

// One stream's trouble stays that stream's (issue 13): a failed write ends its session only,
// a pipeline that falls behind is cut off instead of buffered without bound, and a pipeline
// that always dies is refused for a while instead of looping.

const low = [{ name: "240p", width: 426, height: 240, fps: 30, bitrate: 300_000 }];

async function metric(t: TestServer, name: string): Promise<number> {
  const text = await (await fetch(`${t.server.adminUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(name + " "));
  return line ? Number(line.split(" ")[1]) : 0;
}

describe("one stream's failure ends that stream only", () => {
  const fx = useTestServer({ HLS_SEGMENT_SECONDS: "1" });
  const { api } = fx;
  const url = (key: string) => `rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${key}`;
  const isActive = async (id: string) => (await api("GET", `/stream/${id}`)).body.isActive as boolean;

  it("a storage write failure in one of two live streams ends that one, with the reason; the other goes on", async () => {
    const a = (await api("POST", "/stream", { name: "a", profiles: low })).body;
    const b = (await api("POST", "/stream", { name: "b", profiles: low })).body;
    const pa = pushTestStream(url(a.streamKey), { seconds: 60 });
    const pb = pushTestStream(url(b.streamKey), { seconds: 60 });
    await waitFor("both live", async () => (await isActive(a.id)) && (await isActive(b.id)));
    // Root ignores permissions: an immutable folder refuses even root's writes.
    const folder = path.join(fx.t.dataDir, "hls", a.playbackId, "0");
    expect(spawnSync("chattr", ["+i", folder]).status).toBe(0);
    try {
      const ended = await waitFor("a's session ended", async () => {
        const [x] = (await api("GET", `/stream/${a.id}/sessions`)).body;
        return x?.endReason ? x : undefined;
      }, 30_000);
      expect(ended.endReason).toMatch(/^storage unavailable: cannot write to the stream's media folder: E(PERM|ACCES)/);
      expect(await isActive(a.id)).toBe(false);
      expect((await pa.exited).code).not.toBe(0);
      // b never noticed: still live, one session, still adding segments.
      const before = (await api("GET", `/stream/${b.id}`)).body.sourceSegments;
      await waitFor("b keeps adding segments", async () => (await api("GET", `/stream/${b.id}`)).body.sourceSegments > before + 1, 10_000);
      expect(await isActive(b.id)).toBe(true);
      expect((await api("GET", `/stream/${b.id}/sessions`)).body).toHaveLength(1);
    } finally {
      spawnSync("chattr", ["-i", folder]);
      pa.child.kill("SIGKILL");
      pb.child.kill("SIGKILL");
      await Promise.all([pa.exited, pb.exited]);
    }
  }, 60_000);

  it("no process carries the stream key, and the stream is not played over RTMP, from this machine either", async () => {
    // A profile: the run is an ffmpeg (a copied source is packaged with no process at all).
    const s = (await api("POST", "/stream", { name: "no rtmp play", profiles: low })).body;
    const push = pushTestStream(url(s.streamKey), { seconds: 60 });
    try {
      await waitFor("live", () => isActive(s.id));
      // The pipeline reads the publish on its stdin: no url of the stream in any argv.
      const argv = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      const pids = fx.t.server.processes.pids();
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) expect(argv(pid)).not.toContain(s.streamKey);
      expect(argv(pids[0]!)).toContain("-f flv -i pipe:0");
      for (const pid of pids) expect(argv(pid)).not.toContain(`/live/${s.id}`);
      // Neither its key nor its internal name plays over RTMP, even from loopback.
      for (const name of [s.id, s.streamKey]) {
        const reader = spawn(FFMPEG, ["-hide_banner", "-nostdin", "-loglevel", "error", "-i", url(name), "-c", "copy", "-f", "null", "-"], { stdio: ["ignore", "ignore", "pipe"] });
        let stderr = "";
        reader.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
        const code = await new Promise<number | null>((resolve) => reader.once("close", (c) => resolve(c)));
        expect(code).not.toBe(0);
        expect(stderr).toContain("this server does not play streams over RTMP");
      }
      expect(await isActive(s.id)).toBe(true);
      expect(push.child.exitCode).toBeNull();
    } finally {
      push.child.kill("SIGKILL");
      await push.exited;
    }
  }, 60_000);
});

describe("a pipeline that falls behind its publisher", () => {
  const fx = useTestServer({ HLS_SEGMENT_SECONDS: "1" });
  const { api } = fx;

  it("is cut off, and its restart counts as a failure (backed off, bounded), never a silent loop", async () => {
    // A profile: the run is an ffmpeg that can be stopped (a copied source runs none).
    const s = (await api("POST", "/stream", { name: "stuck pipeline", profiles: low })).body;
    const cbr = ["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", "-b:v", "8M", "-minrate", "8M", "-maxrate", "8M", "-bufsize", "2M", "-x264-params", "nal-hrd=cbr"];
    const push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 60, size: "640x360", codec: cbr });
    try {
      await waitFor("live", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
      const [pipeline] = fx.t.server.processes.pids();
      process.kill(pipeline!, "SIGSTOP"); // a pipeline stuck on a slow disk, or short of CPU
      await waitFor("the pipeline's input cut off", async () => (await metric(fx.t, "onair_rtmp_readers_cut_total")) >= 1, 30_000, 250);
      process.kill(pipeline!, "SIGCONT");
      await waitFor("a restart, counted", async () => (await metric(fx.t, "onair_pipeline_restarts_total")) >= 1, 15_000, 250);
      // The session goes on with a new run, in the same playlists.
      await waitFor("a new run", () => fx.t.server.processes.pids().some((pid) => pid !== pipeline), 10_000);
      expect((await api("GET", `/stream/${s.id}/sessions`)).body).toHaveLength(1);
      expect(push.child.exitCode).toBeNull();
    } finally {
      push.child.kill("SIGKILL");
      await push.exited;
    }
  }, 90_000);
});

describe("a stream whose pipeline always fails", () => {
  let t: TestServer;
  let api: ReturnType<typeof apiClient>;
  const dir = tempDir("onair-ffmpeg-");
  beforeAll(async () => {
    // The real ffmpeg, except that live pipelines (the only ffmpeg run with -progress) die at once.
    const wrapper = path.join(dir, "ffmpeg");
    fs.writeFileSync(wrapper, `#!/bin/sh\ncase "$*" in *"-progress pipe:1"*) echo "simulated pipeline failure" >&2; exit 1;; esac\nexec ${FFMPEG} "$@"\n`, { mode: 0o755 });
    t = await startTestServer({ FFMPEG_PATH: wrapper });
    api = apiClient(t.apiUrl, t.key);
  });
  afterAll(async () => {
    await t.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("after 3 sessions ending in pipeline failure, publishes are refused with the reason instead of looping", async () => {
    const s = (await api("POST", "/stream", { name: "always fails", profiles: low })).body;
    const url = `rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`;
    for (let i = 1; i <= 3; i++) {
      const push = pushTestStream(url, { seconds: 60 });
      const end = await push.exited;
      expect(end.stderr).toContain("Server error: pipeline failed: ffmpeg exited with code 1 after 3 restarts");
      await waitFor(`session ${i} ended`, async () => {
        const list = (await api("GET", `/stream/${s.id}/sessions`)).body as { endReason?: string }[];
        return list.length === i && list.every((x) => x.endReason?.startsWith("pipeline failed"));
      }, 10_000);
    }
    const refused = await pushTestStream(url, { seconds: 60 }).exited;
    expect(refused.code).not.toBe(0);
    expect(refused.afterMs).toBeLessThan(3000);
    expect(refused.stderr).toMatch(/Server error: the stream's pipeline failed 3 times in 2 minutes: publishes are refused for \d+ s more/);
    expect((await api("GET", `/stream/${s.id}/sessions`)).body).toHaveLength(3);
  }, 90_000);
});
