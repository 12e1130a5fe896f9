import { MAX_PIPELINE_RESTARTS } from "../../src/sessions";
import { probe, pushTestStream, waitFor } from "../helpers/media";
import { useWatchedServer } from "../helpers/watched";

const fx = useWatchedServer({ HLS_SEGMENT_SECONDS: "1" }, ["stream.started", "stream.idle"]);
const { api, eventsOf } = fx;
const pipelinePid = (): number | undefined => fx.t.server.processes.pids()[0];
/** The pipeline's pid once it differs from `previous`. */
const newPipelinePid = (previous: number | undefined) => {
  const pid = pipelinePid();
  return pid !== undefined && pid !== previous ? pid : undefined;
};
/** One small rung: the session's run is an ffmpeg to kill (a copied source is packaged with no process). */
const profiles = [{ name: "180p", width: 320, height: 180, fps: 30, bitrate: 300_000 }];
const playlist = async (playbackId: string) => (await fetch(`http://127.0.0.1:${fx.t.server.port}/hls/${playbackId}/0/index.m3u8`)).text();

describe("pipeline faults", () => {
  it("kill -9 of the pipeline's ffmpeg: it restarts, the playlist goes on, state and events stay consistent", async () => {
    const s = (await api("POST", "/stream", { name: "restart", profiles })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 12 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
    const before = await playlist(s.playbackId);
    const pid = pipelinePid()!;
    process.kill(pid, "SIGKILL");

    const restarted = await waitFor("a new pipeline", () => newPipelinePid(pid), 5000);
    expect(restarted).not.toBe(pid);
    // The same playlist continues past the seam; players are told of the discontinuity.
    const after = await waitFor("segments after the restart", async () => {
      const text = await playlist(s.playbackId);
      // The second run's init segment follows the seam, and a segment of it is listed.
      return /#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI="\w+_init1\.mp4"\n(#.*\n)*#EXTINF:[\d.]+,\n\w+_\d+\.m4s/.test(text) && text;
    }, 10_000);
    expect(after).not.toContain("#EXT-X-ENDLIST");
    expect(before.split("\n").find((l) => /^\w+_\d+\.m4s$/.test(l))).toBeDefined();
    expect((await api("GET", `/stream/${s.id}`)).body.isActive).toBe(true);

    expect((await push.exited).code).toBe(0);
    await waitFor("idle", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive, 5000);
    await waitFor("stream.idle delivered", () => eventsOf(s.id).includes("stream.idle"), 5000);
    expect(eventsOf(s.id)).toEqual(["stream.started", "stream.idle"]);
    const sessions = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(sessions).toHaveLength(1);
    expect(sessions[0].sourceSegmentsDuration).toBeGreaterThan(7);
    // Idle comes as the publisher leaves; the session's end follows once ffmpeg has flushed its
    // last segments (a loaded host took longer than the API calls above).
    await waitFor("the ended playlist", async () => /#EXT-X-ENDLIST\s*$/.test(await playlist(s.playbackId)), 10_000);
    await waitFor("no process left", () => fx.t.server.processes.size === 0, 5000);
  });

  it("a recorded session that survives a pipeline restart: the recording marks the seam and its MP4 has it all", async () => {
    const s = (await api("POST", "/stream", { name: "recorded restart", record: true, profiles })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 10 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
    await waitFor("2 s recorded", async () => (await api("GET", `/stream/${s.id}`)).body.sourceSegmentsDuration >= 2, 10_000);
    const pid = pipelinePid()!;
    process.kill(pid, "SIGKILL");
    await waitFor("a new pipeline", () => newPipelinePid(pid), 5000);
    expect((await push.exited).code).toBe(0);

    const session = await waitFor("the recording", async () => {
      const [x] = (await api("GET", `/stream/${s.id}/sessions?record=1`)).body;
      return x && ["ready", "failed"].includes(x.recordingStatus) ? x : undefined;
    }, 30_000);
    expect(session.recordingStatus).toBe("ready");
    const vod = await (await fetch(session.recordingUrl.replace("/index.m3u8", "/0/index.m3u8"))).text();
    expect(vod.match(/#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI="[^"]+_init1\.mp4[^"]*"\n#EXTINF:[\d.]+,\n\S+\.m4s/g)).toHaveLength(1);
    expect(vod).toMatch(/#EXT-X-ENDLIST\s*$/);
    const mp4 = await probe(session.mp4Url);
    expect(mp4.streams.map((x) => x.codec_type).sort()).toEqual(["audio", "video"]);
    // Everything captured on both sides of the seam, give or take a segment.
    expect(Math.abs(mp4.duration - session.sourceSegmentsDuration)).toBeLessThan(1.5);
  });

  it("a pipeline that keeps dying ends the session cleanly after the last restart", async () => {
    const s = (await api("POST", "/stream", { name: "doomed pipeline", profiles })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 60 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
    let last: number | undefined;
    for (let i = 0; i <= MAX_PIPELINE_RESTARTS; i++) {
      const pid = await waitFor(`pipeline ${i + 1}`, () => newPipelinePid(last), 10_000);
      last = pid;
      process.kill(pid, "SIGKILL");
    }
    // After the last restart the session ends: the publisher is cut off, the stream goes idle.
    const end = await push.exited;
    expect(end.code).not.toBe(0);
    await waitFor("idle", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive, 5000);
    await waitFor("stream.idle delivered", () => eventsOf(s.id).includes("stream.idle"), 5000);
    expect(eventsOf(s.id)).toEqual(["stream.started", "stream.idle"]);
    expect(fx.t.server.processes.size).toBe(0);
    const [session] = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(session.isActive).toBe(false);
  });
});
