import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { FFMPEG, probe, pushTestStream, waitFor } from "../helpers/media";
import { useWatchedServer } from "../helpers/watched";

// A stream's life outlives its publisher's connection (issue 13): drops inside the reconnect
// window continue the session, its playlists and its recording; stalled and duplicate
// publishers give way to the newest one.

const fx = useWatchedServer({ HLS_SEGMENT_SECONDS: "1", RECONNECT_WINDOW_SECONDS: "30", PUBLISH_MEDIA_TIMEOUT_SECONDS: "2" });
const { api, received } = fx;

const low = [{ name: "240p", width: 426, height: 240, fps: 30, bitrate: 300_000 }];
const rtmpUrl = (key: string) => `rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${key}`;
const hlsUrl = (playbackId: string, p = "index.m3u8") => `http://127.0.0.1:${fx.t.server.port}/hls/${playbackId}/${p}`;
const isActive = async (id: string) => (await api("GET", `/stream/${id}`)).body.isActive as boolean;
const eventsFor = (id: string) => received().filter((e) => e.stream.id === id);

/** Reads a live media playlist every 200 ms and checks what RFC 8216 says a reload may do. */
function watchPlaylist(url: string) {
  const problems: string[] = [];
  const seen = new Map<number, string>();
  let lastSequence = -1;
  let maxSeq = -1;
  let stop = false;
  const done = (async () => {
    while (!stop) {
      const res = await fetch(url).catch(() => undefined);
      if (res?.ok) {
        const text = await res.text();
        const sequence = Number(/#EXT-X-MEDIA-SEQUENCE:(\d+)/.exec(text)?.[1] ?? 0);
        if (sequence < lastSequence) problems.push(`MEDIA-SEQUENCE went back from ${lastSequence} to ${sequence}`);
        lastSequence = sequence;
        const uris = text.split("\n").filter((l) => l && !l.startsWith("#"));
        uris.forEach((uri, i) => {
          const seq = sequence + i;
          const before = seen.get(seq);
          if (before !== undefined && before !== uri) problems.push(`segment ${seq} changed from ${before} to ${uri}`);
          seen.set(seq, uri);
          maxSeq = Math.max(maxSeq, seq);
        });
      } else if (res) {
        problems.push(`playlist answered ${res.status}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    problems,
    get maxSeq() {
      return maxSeq;
    },
    stop: async () => {
      stop = true;
      await done;
    },
  };
}

/** A player: ffmpeg reading the HLS as a live client would, reporting how far it has played. */
function hlsPlayer(url: string) {
  const child = spawn(FFMPEG, ["-hide_banner", "-nostdin", "-loglevel", "error", "-i", url, "-map", "0:v", "-c", "copy", "-f", "null", "-", "-progress", "pipe:1"], { stdio: ["ignore", "pipe", "pipe"] });
  let playedSeconds = 0;
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => {
    for (const m of c.toString().matchAll(/out_time_us=(\d+)/g)) playedSeconds = Math.max(playedSeconds, Number(m[1]) / 1e6);
  });
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return { child, exited, played: () => playedSeconds, stderr: () => stderr };
}

describe("reconnect window", () => {
  it("a publisher that drops and comes back inside the window continues the same session, playlists and recording", async () => {
    const s = (await api("POST", "/stream", { name: "wifi blip", record: true, profiles: low })).body;
    const first = pushTestStream(rtmpUrl(s.streamKey), { seconds: 60 });
    await waitFor("isActive", () => isActive(s.id));
    const playlist = watchPlaylist(hlsUrl(s.playbackId, "0/index.m3u8"));
    const player = hlsPlayer(hlsUrl(s.playbackId));
    await waitFor("the player is playing", () => player.played() > 1);
    await waitFor("a few segments", () => playlist.maxSeq >= 3);

    first.child.kill("SIGKILL");
    await waitFor("isActive false at once", async () => !(await isActive(s.id)), 5000);
    await waitFor("stream.idle", () => eventsFor(s.id).some((e) => e.event === "stream.idle"), 5000);
    const [open] = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(open.endReason).toBeUndefined();
    const playedBeforeGap = player.played();

    const second = pushTestStream(rtmpUrl(s.streamKey), { seconds: 5 });
    await waitFor("isActive again", () => isActive(s.id), 15_000);
    const sessions = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(sessions.map((x: { id: string }) => x.id)).toEqual([open.id]);
    // The same player went on across the gap, without being restarted.
    await waitFor("the player plays media from after the reconnect", () => player.played() > playedBeforeGap + 2, 15_000);
    expect(player.child.exitCode).toBeNull();
    expect((await second.exited).code).toBe(0);

    // The second publisher left too; end the session rather than wait out the window.
    await waitFor("idle again", async () => !(await isActive(s.id)), 5000);
    expect((await api("DELETE", `/stream/${s.id}/terminate`)).status).toBe(204);
    await playlist.stop();
    player.child.kill("SIGKILL");
    await player.exited;
    expect(playlist.problems).toEqual([]);

    const ready = await waitFor("recording ready", async () => {
      const [x] = (await api("GET", `/stream/${s.id}/sessions`)).body;
      return x.recordingStatus === "ready" ? x : undefined;
    }, 30_000);
    expect(ready.id).toBe(open.id);
    expect(ready.endReason).toBe("terminated");
    // The status is written first, then recording.ready is raised and delivered.
    await waitFor("recording.ready delivered", () => eventsFor(s.id).some((e) => e.event === "recording.ready"), 10_000);
    const names = eventsFor(s.id).map((e) => e.event);
    expect(names.filter((n) => n.startsWith("stream."))).toEqual(["stream.started", "stream.idle", "stream.started", "stream.idle"]);
    expect(names.filter((n) => n === "recording.started")).toHaveLength(1);
    expect(names.filter((n) => n === "recording.ready")).toHaveLength(1);
    expect(new Set(eventsFor(s.id).map((e) => e.payload.sessionId))).toEqual(new Set([open.id]));

    // One recording: both parts, one seam.
    const dir = path.join(fx.t.dataDir, "recordings", open.id);
    const vod = fs.readFileSync(path.join(dir, "0", "index.m3u8"), "utf8");
    expect(vod.match(/#EXT-X-DISCONTINUITY\n/g)).toHaveLength(1);
    const mp4 = await probe(path.join(dir, "output.mp4"));
    expect(mp4.duration).toBeGreaterThan(ready.sourceSegmentsDuration - 1.5);
    expect(mp4.duration).toBeLessThan(ready.sourceSegmentsDuration + 1.5);
    expect(ready.sourceSegmentsDuration).toBeGreaterThan(playedBeforeGap + 3);
  }, 90_000);

  it("a publisher back after the window gets a new session; the first ends with its playlists", async () => {
    const s = (await api("POST", "/stream", { name: "short window", profiles: low, reconnectWindow: 1 })).body;
    expect(s.reconnectWindow).toBe(1);
    const first = pushTestStream(rtmpUrl(s.streamKey), { seconds: 3 });
    await waitFor("isActive", () => isActive(s.id));
    expect((await first.exited).code).toBe(0);
    const ended = await waitFor("the first session ends when the window runs out", async () => {
      const [x] = (await api("GET", `/stream/${s.id}/sessions`)).body;
      return x?.endReason ? x : undefined;
    }, 10_000);
    expect(ended.endReason).toBe("publisher left: it did not reconnect within 1 s");
    expect(await (await fetch(hlsUrl(s.playbackId, "0/index.m3u8"))).text()).toContain("#EXT-X-ENDLIST");

    const second = pushTestStream(rtmpUrl(s.streamKey), { seconds: 3 });
    await waitFor("isActive", () => isActive(s.id), 15_000);
    expect((await second.exited).code).toBe(0);
    const sessions = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(sessions).toHaveLength(2);
    expect(sessions[1].id).toBe(ended.id);
    await waitFor("second session ended", async () => !!(await api("GET", `/stream/${s.id}/sessions`)).body[0].endReason, 10_000);
  }, 60_000);
});

describe("stalled and duplicate publishers", () => {
  it("a publisher that stops sending (SIGSTOP) is disconnected after PUBLISH_MEDIA_TIMEOUT_SECONDS; a new one is taken at once", async () => {
    const s = (await api("POST", "/stream", { name: "laptop asleep", profiles: low })).body;
    const stalled = pushTestStream(rtmpUrl(s.streamKey), { seconds: 60 });
    await waitFor("isActive", () => isActive(s.id));
    stalled.child.kill("SIGSTOP");
    const stoppedAt = Date.now();
    try {
      await waitFor("isActive false", async () => !(await isActive(s.id)), 8000);
      // 2 s without media, found by a sweep every 0.5 s; plus the API's own look.
      expect(Date.now() - stoppedAt).toBeLessThan(5000);
      const session = fx.t.server.sessions.liveSession(s.id)!;
      expect(session.currentPublisher).toBeUndefined();
      const next = pushTestStream(rtmpUrl(s.streamKey), { seconds: 4 });
      await waitFor("live again with the new publisher", () => isActive(s.id), 15_000);
      expect((await api("GET", `/stream/${s.id}/sessions`)).body).toHaveLength(1);
      expect((await next.exited).code).toBe(0);
    } finally {
      stalled.child.kill("SIGKILL");
      await stalled.exited;
    }
    // The second publisher's stream.idle is delivered as the webhook it is: after its publisher left.
    const streamEvents = () => eventsFor(s.id).map((e) => e.event).filter((n) => n.startsWith("stream."));
    await waitFor("the second stream.idle", () => streamEvents().length >= 4, 10_000);
    expect(streamEvents()).toEqual(["stream.started", "stream.idle", "stream.started", "stream.idle"]);
    await api("DELETE", `/stream/${s.id}/terminate`);
  }, 60_000);

  it("a stalled publisher's key is never locked: a new publish replaces it within 2 s", async () => {
    const s = (await api("POST", "/stream", { name: "half-open socket", profiles: low })).body;
    const stalled = pushTestStream(rtmpUrl(s.streamKey), { seconds: 60 });
    await waitFor("isActive", () => isActive(s.id));
    const runtime = fx.t.server.sessions.liveSession(s.id)!;
    const old = runtime.currentPublisher;
    const playlist = watchPlaylist(hlsUrl(s.playbackId, "0/index.m3u8"));
    await waitFor("a few segments", () => playlist.maxSeq >= 2);
    const before = playlist.maxSeq;
    stalled.child.kill("SIGSTOP");
    try {
      const started = Date.now();
      const next = pushTestStream(rtmpUrl(s.streamKey), { seconds: 4 });
      await waitFor("the new publisher feeds the session", () => runtime.currentPublisher !== undefined && runtime.currentPublisher !== old, 2000);
      expect(Date.now() - started).toBeLessThan(2000);
      await waitFor("live with the new publisher", () => isActive(s.id), 15_000);
      // The same playlists go on: the sequence only grows, past where the first publisher left it.
      await waitFor("segments from the new publisher", () => playlist.maxSeq > before + 1, 10_000);
      expect((await next.exited).code).toBe(0);
      expect((await api("GET", `/stream/${s.id}/sessions`)).body).toHaveLength(1);
      await playlist.stop();
      expect(playlist.problems).toEqual([]);
    } finally {
      await playlist.stop();
      stalled.child.kill("SIGKILL");
      await stalled.exited;
    }
    await api("DELETE", `/stream/${s.id}/terminate`);
  }, 60_000);

  it("a second publisher on a live key replaces the first (the newest wins), in the same session", async () => {
    const s = (await api("POST", "/stream", { name: "two encoders", profiles: low })).body;
    const first = pushTestStream(rtmpUrl(s.streamKey), { seconds: 60 });
    await waitFor("isActive", () => isActive(s.id));
    const playlist = watchPlaylist(hlsUrl(s.playbackId, "0/index.m3u8"));
    await waitFor("a few segments", () => playlist.maxSeq >= 2);
    const before = playlist.maxSeq;
    const second = pushTestStream(rtmpUrl(s.streamKey), { seconds: 5 });
    const firstEnd = await first.exited;
    expect(firstEnd.code).not.toBe(0);
    await waitFor("live with the second publisher", async () => (await isActive(s.id)) && eventsFor(s.id).filter((e) => e.event === "stream.started").length === 2, 15_000);
    await waitFor("segments from the second publisher", () => playlist.maxSeq > before + 1, 10_000);
    expect((await second.exited).code).toBe(0);
    await playlist.stop();
    // One session, one set of playlists whose sequence only grew across the takeover.
    expect(playlist.problems).toEqual([]);
    const sessions = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(sessions).toHaveLength(1);
    await api("DELETE", `/stream/${s.id}/terminate`);
    await waitFor("ended", async () => !!(await api("GET", `/stream/${s.id}/sessions`)).body[0].endReason, 10_000);
  }, 60_000);
});
