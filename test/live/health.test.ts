import { pushTestStream, waitFor } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// A live stream's isHealthy and issues come from real signals (issue 13), and the settings
// that bound what a stream may ask for answer with clear 422s.

const fx = useTestServer({ RECONNECT_WINDOW_SECONDS: "20" });
const { api } = fx;
const low = [{ name: "240p", width: 426, height: 240, fps: 30, bitrate: 300_000 }];
const url = (key: string) => `rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${key}`;
const get = async (id: string) => (await api("GET", `/stream/${id}`)).body;

async function issueGauge(issue: string): Promise<number> {
  const text = await (await fetch(`${fx.t.server.adminUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`onair_stream_issues{issue="${issue}"}`));
  return line ? Number(line.split(" ")[1]) : 0;
}

describe("stream health", () => {
  it("a stream without a session has neither isHealthy nor issues", async () => {
    const s = (await api("POST", "/stream", { name: "quiet" })).body;
    expect(s.isHealthy).toBeNull();
    expect(s.issues).toBeNull();
    expect(s.reconnectWindow).toBeNull();
    expect(s.dvrWindow).toBeNull();
  });

  it("a well-behaved publisher is healthy", async () => {
    const s = (await api("POST", "/stream", { name: "fine", profiles: low })).body;
    const push = pushTestStream(url(s.streamKey), { seconds: 8 });
    await waitFor("live", async () => (await get(s.id)).isActive);
    const live = await get(s.id);
    expect(live.isHealthy).toBe(true);
    expect(live.issues).toEqual([]);
    await push.exited;
    await api("DELETE", `/stream/${s.id}/terminate`);
  }, 30_000);

  it("video only with 5 s keyframes: unhealthy, saying why; then reconnecting while the window is open", async () => {
    const s = (await api("POST", "/stream", { name: "badly set encoder", profiles: low })).body;
    const video = ["-c:v", "libx264", "-preset", "ultrafast", "-g", "150", "-keyint_min", "150", "-sc_threshold", "0", "-pix_fmt", "yuv420p", "-b:v", "500k"];
    const push = pushTestStream(url(s.streamKey), { seconds: 30, codec: video, audio: ["-an"] });
    const unhealthy = await waitFor("both issues", async () => {
      const x = await get(s.id);
      return x.isActive && x.issues?.length === 2 ? x : undefined;
    }, 20_000);
    expect(unhealthy.isHealthy).toBe(false);
    expect(unhealthy.issues[0]).toMatch(/^keyframe interval 5\.0 s is longer than 2 s/);
    expect(unhealthy.issues[1]).toBe("no audio: the publisher sends video only");
    expect(await issueGauge("no_audio")).toBe(1);
    expect(await issueGauge("long_keyframe_interval")).toBe(1);

    push.child.kill("SIGKILL");
    await push.exited;
    const waiting = await waitFor("reconnecting", async () => {
      const x = await get(s.id);
      return !x.isActive && x.isHealthy === false ? x : undefined;
    }, 5000);
    expect(waiting.issues).toHaveLength(1);
    expect(waiting.issues[0]).toMatch(/^reconnecting: the publisher left; the session waits (19|20) s more for it$/);
    expect(await issueGauge("reconnecting")).toBe(1);
    await api("DELETE", `/stream/${s.id}/terminate`);
    await waitFor("no session, no health", async () => (await get(s.id)).isHealthy === null, 10_000);
  }, 60_000);
});

describe("limits on what a stream asks for", () => {
  it.each([
    [{ reconnectWindow: 1801 }, "reconnectWindow: must be at most 1800 seconds"],
    [{ reconnectWindow: -1 }, "reconnectWindow: must be at least 0"],
    [{ reconnectWindow: 2.5 }, "reconnectWindow: must be a whole number of seconds"],
    [{ dvrWindow: 21_601 }, "dvrWindow: must be at most 21600 seconds"],
    [{ dvrWindow: -1 }, "dvrWindow: must be at least 0"],
    [{ dvrWindow: 1.5 }, "dvrWindow: must be a whole number of seconds"],
    [{ dvrWindow: "x" }, "dvrWindow: must be a number"],
    [{ profiles: [{ name: "4k", width: 3840, height: 2160, fps: 30, bitrate: 20_000_000 }] }, "profiles.0: 3840x2160 is larger than 1920x1080 (MAX_RENDITION_WIDTH, MAX_RENDITION_HEIGHT)"],
    [{ profiles: [{ name: "hfr", width: 1280, height: 720, fps: 120, bitrate: 6_000_000 }] }, "profiles.0: 120 fps is more than 60 (MAX_RENDITION_FPS)"],
    [{ profiles: [1, 2, 3, 4, 5, 6].map((i) => ({ name: `p${i}`, width: 640, height: 360, fps: 30, bitrate: 800_000 })) }, "profiles: at most 5 profiles per stream (MAX_PROFILES_PER_STREAM), got 6"],
  ])("%j → 422", async (fields, message) => {
    const res = await api("POST", "/stream", { name: "too much", ...fields });
    expect(res.status).toBe(422);
    expect(res.body.errors).toContain(message);
  });

  it("1080p60 in portrait fits; reconnectWindow can be changed and cleared", async () => {
    const portrait = [{ name: "vertical", width: 1080, height: 1920, fps: 60, bitrate: 6_000_000 }];
    const s = (await api("POST", "/stream", { name: "phone", profiles: portrait, reconnectWindow: 0 })).body;
    expect(s.reconnectWindow).toBe(0);
    expect((await api("PATCH", `/stream/${s.id}`, { reconnectWindow: 600 })).status).toBe(204);
    expect((await get(s.id)).reconnectWindow).toBe(600);
    expect((await api("PATCH", `/stream/${s.id}`, { reconnectWindow: null })).status).toBe(204);
    expect((await get(s.id)).reconnectWindow).toBeNull();
  });

  it("dvrWindow is set on create, changed and cleared by PATCH, shown by GET; bad values change nothing", async () => {
    const s = (await api("POST", "/stream", { name: "seekable", dvrWindow: 3600 })).body;
    expect(s.dvrWindow).toBe(3600);
    expect((await get(s.id)).dvrWindow).toBe(3600);
    expect((await api("PATCH", `/stream/${s.id}`, { dvrWindow: 21_600 })).status).toBe(204);
    expect((await get(s.id)).dvrWindow).toBe(21_600);
    for (const [bad, message] of [[-1, "must be at least 0"], [1.5, "must be a whole number of seconds"], [21_601, "must be at most 21600 seconds"], ["x", "must be a number"]] as const) {
      const res = await api("PATCH", `/stream/${s.id}`, { dvrWindow: bad });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([`dvrWindow: ${message}`]);
    }
    // Other fields leave it alone; 0 (off) is kept as 0, null gives the server's default back.
    expect((await api("PATCH", `/stream/${s.id}`, { name: "renamed" })).status).toBe(204);
    expect((await get(s.id)).dvrWindow).toBe(21_600);
    expect((await api("PATCH", `/stream/${s.id}`, { dvrWindow: 0 })).status).toBe(204);
    expect((await get(s.id)).dvrWindow).toBe(0);
    expect((await api("PATCH", `/stream/${s.id}`, { dvrWindow: null })).status).toBe(204);
    expect((await get(s.id)).dvrWindow).toBeNull();
    const listed = ((await api("GET", "/stream?streamsonly=1&limit=1000")).body as { id: string; dvrWindow: unknown }[]).find((x) => x.id === s.id);
    expect(listed?.dvrWindow).toBeNull();

    // Child stream objects are a session's history: they carry neither window.
    await api("PATCH", `/stream/${s.id}`, { dvrWindow: 60 });
    const session = await fx.t.server.store.sessions.start((await fx.t.server.store.streams.get(s.id))!);
    const child = (await api("GET", `/stream/${session.id}`)).body;
    expect(child.parentId).toBe(s.id);
    expect(child).not.toHaveProperty("dvrWindow");
    expect(child).not.toHaveProperty("reconnectWindow");
  });
});
