import fs from "node:fs";
import { probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { tempDir } from "../helpers/server";
import { freePort, startRtmpDestination, startRtmpsDestination, startSrtDestination, type Destination } from "./destinations";
import { newestSegment, pushConnections, startHarness, targetEvents, type Harness } from "./harness";

// Real ffmpeg publishing into a real server, which pushes with real ffmpeg to real listening
// destinations (RTMP, RTMPS, SRT) that write what they receive to files; events arrive at a
// real webhook receiver. 1 s segments keep it quick.

const PROFILES = [
  { name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 },
  { name: "90p", bitrate: 120_000, fps: 15, width: 160, height: 90 },
];

let h: Harness;
let dir: string;
const destinations: Destination[] = [];
const publishers: Push[] = [];

beforeAll(async () => {
  h = await startHarness();
  dir = tempDir("onair-ms-dest-");
});
afterEach(async () => {
  // Only what this file started, by PID: publishers still running, then listeners.
  for (const p of publishers.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await Promise.all(destinations.splice(0).map((d) => d.close()));
});
afterAll(async () => {
  await h.stop();
  await h.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function destination(start: (dir: string, name: string) => Promise<Destination>, name: string): Promise<Destination> {
  const d = await start(dir, name);
  destinations.push(d);
  return d;
}
function publish(streamKey: string, seconds: number): Push {
  const p = pushTestStream(`${h.rtmp}/${streamKey}`, { seconds });
  publishers.push(p);
  return p;
}
const getStream = async (id: string) => (await h.api("GET", `/stream/${id}`)).body;
const createTarget = async (d: Destination, name: string) => {
  // The RTMPS destination's certificate is a self-signed test one: verification (on by default,
  // see outbound.test.ts) is turned off for it, as an operator would for such an ingest.
  const res = await h.api("POST", "/multistream/target", { url: d.url, name, ...(d.url.startsWith("rtmps:") ? { tlsVerify: false } : {}) });
  expect(res.status).toBe(201);
  return res.body as { id: string; name: string };
};
const eventNames = (targetId: string) => targetEvents(h.receiver, targetId).map((e) => e.event);
const waitForEvent = (targetId: string, event: string, count = 1, timeoutMs = 15_000) =>
  h.receiver.waitFor(() => eventNames(targetId).filter((e) => e === event).length >= count, `${event} ×${count} for target ${targetId}`, timeoutMs);
function expectNoSecrets(...ds: Destination[]): void {
  const logs = h.logs.join("");
  for (const d of ds) {
    expect(logs).not.toContain(d.key);
    for (const r of h.receiver.received) expect(r.raw).not.toContain(d.key);
  }
}

describe("multistream pushes", () => {
  it("copies the source, a rendition and video only to RTMP, RTMPS and SRT; connected then disconnected", async () => {
    const rtmp = await destination(startRtmpDestination, "source");
    const rtmps = await destination(startRtmpsDestination, "rendition");
    const srt = await destination(startSrtDestination, "video-only");
    const tRtmp = await createTarget(rtmp, "rtmp source");
    const tRtmps = await createTarget(rtmps, "rtmps 90p");
    const tSrt = await createTarget(srt, "srt video only");
    const s = (
      await h.api("POST", "/stream", {
        name: "multistreamed",
        profiles: PROFILES,
        multistream: { targets: [{ id: tRtmp.id, profile: "source" }, { id: tRtmps.id, profile: "90p" }, { id: tSrt.id, profile: "source", videoOnly: true }] },
      })
    ).body;

    const startedAt = Date.now();
    const end = await publish(s.streamKey, 7).exited;
    expect(end.code).toBe(0);
    const publishEndedAt = startedAt + end.afterMs;
    // Each listener exits once its publisher (our push) has left, its file complete.
    await Promise.all([rtmp.exited, rtmps.exited, srt.exited]);
    for (const t of [tRtmp, tRtmps, tSrt]) await waitForEvent(t.id, "multistream.disconnected");
    const [session] = (await h.api("GET", `/stream/${s.id}/sessions`)).body;
    const liveAt = h.receiver.received.find((r) => r.body?.event === "stream.started" && r.body.stream.id === s.id)!.body.createdAt as number;

    const cases = [
      { t: tRtmp, d: rtmp, profile: "source", size: [320, 180], audio: true },
      { t: tRtmps, d: rtmps, profile: "90p", size: [160, 90], audio: true },
      { t: tSrt, d: srt, profile: "source", size: [320, 180], audio: false },
    ];
    for (const c of cases) {
      const events = targetEvents(h.receiver, c.t.id);
      expect(events.map((e) => e.event)).toEqual(["multistream.connected", "multistream.disconnected"]);
      for (const e of events) expect(e.payload).toEqual({ sessionId: session.id, target: { id: c.t.id, name: c.t.name, profile: c.profile } });

      const probed = await probe(c.d.file);
      // Copied, not re-encoded: the source's size for `source`, the rendition's for `90p`.
      expect(probed.streams.find((x) => x.codec_type === "video")).toMatchObject({ codec_name: "h264", width: c.size[0], height: c.size[1] });
      const audio = probed.streams.find((x) => x.codec_type === "audio");
      if (c.audio) expect(audio).toMatchObject({ codec_name: "aac" });
      else expect(audio).toBeUndefined();
      // About the pushed length. A source push copies from the GOP the ingest holds when the
      // session goes live (at most 1 s back) to the publisher's end; a rendition push starts at
      // the newest segment then, here the session's first, so it carries the whole session.
      // Starting the push's ffmpeg and its input probe take up to about a second and a half on
      // a busy 2-core machine (CI): the bound checks the push is not cut short, not its start-up.
      if (c.profile === "source") {
        const fromLive = (publishEndedAt - liveAt) / 1000;
        expect(probed.duration).toBeGreaterThan(fromLive - 1.5);
        expect(probed.duration).toBeLessThan(fromLive + 1.5);
      } else {
        expect(Math.abs(probed.duration - session.sourceSegmentsDuration)).toBeLessThan(1);
      }
    }
    expect(h.logs.join("")).toMatch(new RegExp(`"targetId":"${tRtmps.id}".*"multistream push connected`));
    expectNoSecrets(rtmp, rtmps, srt);
    // Nor the stream's own key.
    expect(h.logs.filter((l) => l.includes('"ffmpeg push"')).join("")).not.toContain(s.streamKey);
    await waitFor("every ffmpeg to exit", () => h.server.processes.size === 0, 10_000);
  });

  it("a publisher that drops and reconnects inside the window: the pushes resume on the same targets", async () => {
    const first = await destination(startRtmpDestination, "before-drop");
    const target = await createTarget(first, "resumes");
    const s = (await h.api("POST", "/stream", { name: "blip", profiles: PROFILES, reconnectWindow: 30, multistream: { targets: [{ id: target.id, profile: "source" }] } })).body;
    const dropped = publish(s.streamKey, 60);
    await waitForEvent(target.id, "multistream.connected");
    await waitFor("media at the destination", () => first.received() > 10_000, 10_000);
    dropped.child.kill("SIGKILL");
    await waitForEvent(target.id, "multistream.disconnected");
    await first.exited;
    // The destination takes a new connection on the same address, as a service's ingest does.
    const second = await destination((d, n) => startRtmpDestination(d, n, first.port), "after-drop");
    // Long enough that the push has seconds to carry after the pipeline's restart, however busy
    // the machine.
    const back = publish(s.streamKey, 8);
    await waitForEvent(target.id, "multistream.connected", 2);
    expect((await back.exited).code).toBe(0);
    await second.exited;
    await waitForEvent(target.id, "multistream.disconnected", 2);
    const sessions = (await h.api("GET", `/stream/${s.id}/sessions`)).body;
    expect(sessions).toHaveLength(1);
    const events = targetEvents(h.receiver, target.id);
    expect(events.map((e) => e.event)).toEqual(["multistream.connected", "multistream.disconnected", "multistream.connected", "multistream.disconnected"]);
    for (const e of events) expect(e.payload.sessionId).toBe(sessions[0].id);
    const probed = await probe(second.file);
    expect(probed.streams.find((x) => x.codec_type === "video")).toMatchObject({ codec_name: "h264", width: 320, height: 180 });
    expect(probed.duration).toBeGreaterThan(2);
    await h.api("DELETE", `/stream/${s.id}/terminate`);
    await waitFor("every ffmpeg to exit", () => h.server.processes.size === 0, 10_000);
  });

  it("an unreachable destination: multistream.error while HLS plays on; retried with back-off; a drop is error then disconnected", async () => {
    const port = await freePort(); // nothing listens there yet
    const key = "sk_live_unreachable_0123";
    const target = (await h.api("POST", "/multistream/target", { url: `rtmp://127.0.0.1:${port}/app/${key}`, name: "down for now" })).body;
    const s = (await h.api("POST", "/stream", { name: "pushes to nowhere", multistream: { targets: [{ id: target.id, profile: "source" }] } })).body;
    const publisher = publish(s.streamKey, 60);

    await waitForEvent(target.id, "multistream.error");
    const [error] = targetEvents(h.receiver, target.id);
    expect(error!.payload.error).toBe(`connection refused by 127.0.0.1:${port}`);
    expect(error!.payload.target).toEqual({ id: target.id, name: "down for now", profile: "source" });

    // The stream's own HLS is untouched: still active, new segments keep coming.
    const playlist = h.hls(s.playbackId, "0/index.m3u8");
    const atError = await newestSegment(playlist);
    expect(atError).toBeGreaterThanOrEqual(0);
    await waitFor("three more segments", async () => (await newestSegment(playlist)) >= atError + 3, 10_000);
    expect((await getStream(s.id)).isActive).toBe(true);

    // Retried 1 s, then 2 s, 4 s… apart: every attempt is logged, the same error raised once.
    const retries = () =>
      h.logs
        .map((l) => JSON.parse(l))
        .filter((l) => l.targetId === target.id && l.msg === "multistream push failed: retrying")
        .map((l) => l.retryInMs as number);
    await waitFor("two retries", () => retries().length >= 2, 10_000);
    expect(retries().slice(0, 2)).toEqual([1000, 2000]);

    // The destination comes up: the next retry reaches it (the gap is at most 8 s by now).
    const d = await startRtmpDestination(dir, "comes-up", port);
    destinations.push(d);
    const upAt = Date.now();
    // The retry (at most 8 s away), then a push ffmpeg's start and the event's delivery.
    await waitForEvent(target.id, "multistream.connected", 1, 20_000);
    expect(Date.now() - upAt).toBeLessThan(16_000);
    expect(eventNames(target.id)).toEqual(["multistream.error", "multistream.connected"]);
    await waitFor("media at the destination", () => d.received() > 20_000, 5000);

    // It crashes mid-stream: error (why), then disconnected. (It had not stayed up for 30 s,
    // so the back-off goes on growing: the next attempt is 16 s or more away.)
    d.kill();
    await waitForEvent(target.id, "multistream.disconnected");
    const events = targetEvents(h.receiver, target.id);
    expect(events.map((e) => e.event)).toEqual(["multistream.error", "multistream.connected", "multistream.error", "multistream.disconnected"]);
    expect(events[2]!.payload.error).toBe(`127.0.0.1:${port} dropped the connection`);
    expect((await getStream(s.id)).isActive).toBe(true);

    // The session ends: no retry outlives it.
    publisher.child.kill("SIGKILL");
    await waitFor("isActive false", async () => !(await getStream(s.id)).isActive, 5000);
    await waitFor("every ffmpeg to exit", () => h.server.processes.size === 0, 10_000);
    expect(pushConnections(port)).toEqual([]);
    expect(h.logs.join("")).not.toContain(key);
  });

  it("a target added while live starts within 5 s; disabling or removing one stops only that push", async () => {
    const kept = await destination(startRtmpDestination, "kept");
    const added = await destination(startRtmpDestination, "added");
    const tKept = await createTarget(kept, "kept");
    const s = (await h.api("POST", "/stream", { name: "changed while live", profiles: PROFILES, multistream: { targets: [{ id: tKept.id, profile: "180p" }] } })).body;
    const publisher = publish(s.streamKey, 60);
    await waitForEvent(tKept.id, "multistream.connected");
    const keptConnection = pushConnections(kept.port);
    expect(keptConnection).toHaveLength(1);

    // Added with an inline spec while live.
    const patchedAt = Date.now();
    const patch = await h.api("PATCH", `/stream/${s.id}`, {
      multistream: { targets: [{ id: tKept.id, profile: "180p" }, { spec: { name: "added live", url: added.url }, profile: "90p" }] },
    });
    expect(patch.status).toBe(204);
    const tAdded = (await getStream(s.id)).multistream.targets[1] as { id: string };
    // A new push ffmpeg starts and probes its input: seconds on a busy machine, not a restart of the others.
    await waitForEvent(tAdded.id, "multistream.connected", 1, 10_000);
    await waitFor("the added destination to receive media", () => added.received() > 1000, 10_000 - (Date.now() - patchedAt));
    expect(Date.now() - patchedAt).toBeLessThan(10_000);
    expect(pushConnections(kept.port)).toEqual(keptConnection);

    // Disabling the added target stops its push, and only that one.
    expect((await h.api("PATCH", `/multistream/target/${tAdded.id}`, { disabled: true })).status).toBe(204);
    await waitForEvent(tAdded.id, "multistream.disconnected", 1, 5000);
    await added.exited;
    expect(pushConnections(added.port)).toEqual([]);
    expect(pushConnections(kept.port)).toEqual(keptConnection);
    expect(eventNames(tKept.id)).toEqual(["multistream.connected"]);
    const probed = await probe(added.file);
    expect(probed.streams.map((x) => [x.codec_type, x.width, x.height])).toEqual([["video", 160, 90], ["audio", undefined, undefined]]);

    // Removing the reference stops the other; the stream stays live; the target can go.
    expect((await h.api("PATCH", `/stream/${s.id}`, { multistream: { targets: [] } })).status).toBe(204);
    await waitForEvent(tKept.id, "multistream.disconnected", 1, 5000);
    await kept.exited;
    expect(pushConnections(kept.port)).toEqual([]);
    expect((await getStream(s.id)).isActive).toBe(true);
    expect(h.server.processes.size).toBe(1); // the pipeline alone
    expect((await h.api("DELETE", `/multistream/target/${tKept.id}`)).status).toBe(204);
    expect(eventNames(tKept.id)).toEqual(["multistream.connected", "multistream.disconnected"]);
    expect(eventNames(tAdded.id)).toEqual(["multistream.connected", "multistream.disconnected"]);
    expectNoSecrets(kept, added);

    publisher.child.kill("SIGKILL");
    await waitFor("every ffmpeg to exit", () => h.server.processes.size === 0, 10_000);
  });
});

describe("multistream and shutdown", () => {
  it("stopping the server stops every push, and multistream.disconnected still reaches the receiver", async () => {
    const own = await startHarness();
    let restarted: Harness | undefined;
    try {
      const d = await destination(startRtmpDestination, "shutdown");
      const target = (await own.api("POST", "/multistream/target", { url: d.url, name: "until shutdown" })).body;
      const s = (await own.api("POST", "/stream", { name: "shut down", multistream: { targets: [{ id: target.id, profile: "source" }] } })).body;
      const publisher = pushTestStream(`${own.rtmp}/${s.streamKey}`, { seconds: 60 });
      publishers.push(publisher);
      await own.receiver.waitFor(() => targetEvents(own.receiver, target.id).length > 0, "multistream.connected", 15_000);

      await own.stop({ keepReceiver: true });
      expect(pushConnections(d.port)).toEqual([]);
      expect(own.server.processes.size).toBe(0);
      await d.exited;
      expect((await probe(d.file)).duration).toBeGreaterThan(0.5);

      // Durable: whether it went out before the stop or goes out after a restart. A delivery still
      // running when the stop's grace ran out stays claimed, as after a crash, and comes due again
      // when its lease (15 s) ends: the wait covers that (a loaded clean-clone run needed it).
      restarted = await startHarness({ dataDir: own.dataDir, receiver: own.receiver });
      await own.receiver.waitFor(() => targetEvents(own.receiver, target.id).length >= 2, "multistream.disconnected", 30_000);
      expect(targetEvents(own.receiver, target.id).map((e) => e.event)).toEqual(["multistream.connected", "multistream.disconnected"]);
      expect(own.logs.join("")).not.toContain(d.key);
    } finally {
      await restarted?.stop();
      await own.stop();
      await own.dispose();
    }
  }, 90_000);
});
