import net from "node:net";
import { pushTestStream, waitFor } from "../helpers/media";
import { useWatchedServer } from "../helpers/watched";

const fx = useWatchedServer({ HLS_SEGMENT_SECONDS: "1" }, ["stream.started", "stream.idle"]);
const { api, received, eventsOf } = fx;

describe("publisher faults", () => {
  it("a publisher killed mid-stream that reconnects at once gets a fresh session, events paired", async () => {
    const s = (await api("POST", "/stream", { name: "flaky uplink", record: true })).body;
    const url = `rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`;
    const first = pushTestStream(url, { seconds: 30 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
    first.child.kill("SIGKILL");
    await first.exited;
    // Back within a second, as OBS reconnects: accepted, not refused as "already live".
    const second = pushTestStream(url, { seconds: 4 });
    await waitFor("a second session", async () => (await api("GET", `/stream/${s.id}/sessions`)).body.length === 2, 10_000);
    await waitFor("isActive again", async () => (await api("GET", `/stream/${s.id}`)).body.isActive, 10_000);
    expect((await second.exited).code).toBe(0);
    await waitFor("idle", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive, 5000);
    await waitFor("two stream.idle", () => received().filter((e) => e.stream.id === s.id && e.event === "stream.idle").length === 2, 5000);

    const mine = received().filter((e) => e.stream.id === s.id);
    expect(mine.map((e) => e.event)).toEqual(["stream.started", "stream.idle", "stream.started", "stream.idle"]);
    const [newer, older] = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(mine.map((e) => e.payload.sessionId)).toEqual([older.id, older.id, newer.id, newer.id]);
    // Both sessions' recordings are finalized, the killed one's included.
    const recorded = await waitFor("both recordings finalized", async () => {
      const list = (await api("GET", `/stream/${s.id}/sessions?record=1`)).body as { recordingStatus: string }[];
      return list.length === 2 && list.every((x) => ["ready", "failed"].includes(x.recordingStatus)) ? list : undefined;
    }, 30_000);
    expect(recorded.map((x) => x.recordingStatus)).toEqual(["ready", "ready"]);
    await waitFor("every ffmpeg reaped", () => fx.t.server.processes.size === 0, 10_000);
  });

  it.each([
    ["MPEG-4 Part 2 video", { codec: ["-c:v", "mpeg4", "-strict", "-1"] }],
    ["Sorenson H.263 video (ffmpeg's default for FLV)", { codec: ["-c:v", "flv"] }],
    ["H.264 with MP3 audio (ffmpeg's default for FLV)", { audio: ["-c:a", "libmp3lame", "-b:a", "64k"] }],
  ])("a publisher sending %s is refused at once: no session, no events, no ffmpeg", async (_name, media) => {
    const s = (await api("POST", "/stream", { name: "wrong codec", record: true })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 20, ...media });
    const end = await push.exited;
    expect(end.code).not.toBe(0);
    // Refused on its first video tag, not by the 10 s no-video timeout.
    expect(end.afterMs).toBeLessThan(5000);
    expect((await api("GET", `/stream/${s.id}/sessions`)).body).toEqual([]);
    expect((await api("GET", `/stream/${s.id}`)).body.isActive).toBe(false);
    expect(eventsOf(s.id)).toEqual([]);
    expect(fx.t.server.processes.size).toBe(0);
    // The same key with H.264 right after is taken.
    const good = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 3 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
    expect((await good.exited).code).toBe(0);
    await waitFor("stream.idle", () => eventsOf(s.id).includes("stream.idle"), 10_000);
    expect(eventsOf(s.id)).toEqual(["stream.started", "stream.idle"]);
    // Its recording's remux comes after the session: the next case must not count that ffmpeg.
    await waitFor("the recording finalized", async () => {
      const list = (await api("GET", `/stream/${s.id}/sessions?record=1`)).body as { recordingStatus: string }[];
      return list.length === 1 && ["ready", "failed"].includes(list[0]!.recordingStatus);
    }, 30_000);
    await waitFor("every ffmpeg reaped", () => fx.t.server.processes.size === 0, 10_000);
  });

  it("garbage bytes on the RTMP port harm no one else", async () => {
    const socket = net.connect(fx.t.server.rtmpPort, "127.0.0.1");
    await new Promise((r) => socket.once("connect", r));
    socket.write(Buffer.from("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + "\u0000\u00ff".repeat(5000), "binary"));
    const s = (await api("POST", "/stream", { name: "next to garbage" })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 2 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
    expect((await push.exited).code).toBe(0);
    socket.destroy();
    expect((await api("GET", "/session")).status).toBe(200);
  });
});
