import crypto from "node:crypto";
import fs from "node:fs";
import { ffmpegPidsMentioning, probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { startReceiver, type Received, type Receiver } from "../helpers/receiver";
import { apiClient, tempDir, type Api } from "../helpers/server";
import { startServerProcess, type ServerExit, type ServerProcess } from "../helpers/serverProcess";

// The server as an operator runs it (its own process, `node --import tsx src/main.ts`), killed
// or stopped in the middle of a live recorded session, then started again on the same data
// directory. Everything is real: ffmpeg pushing RTMP, the SQLite file, a webhook receiver.

const EVENTS = ["stream.started", "stream.idle", "recording.started", "recording.waiting", "recording.ready"];
// 1 s segments: a few seconds of recording come quickly. Retries after 1 s, 2 s, 4 s… (docs/api.md#spec-8-limits, its
// 5 s compressed): pending deliveries are retried a few times before the kill, and are still
// inside their window after the restart.
const ENV = { HLS_SEGMENT_SECONDS: "1", WEBHOOK_RETRY_FIRST_MS: "1000", WEBHOOK_RETRY_WINDOW_MS: "120000" };
// A slow 2-core machine: starting tsx, the first segment, an MP4 remux can each take a while.
const FINALIZE_MS = 60_000;

/** What one test started; all of it is ended by PID, and the data directory removed. */
interface Started {
  dataDir: string;
  servers: ServerProcess[];
  pushes: Push[];
  receivers: Receiver[];
}
let started: Started[] = [];

function fixture(): Started {
  const s: Started = { dataDir: tempDir("onair-faults-"), servers: [], pushes: [], receivers: [] };
  started.push(s);
  return s;
}

afterEach(async () => {
  for (const s of started.splice(0)) {
    for (const p of s.pushes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    await Promise.all(s.servers.map((server) => server.kill()));
    // A killed server's pipeline outlives it until its input is gone: never leave one behind.
    for (const pid of ffmpegPidsMentioning(s.dataDir)) process.kill(pid, "SIGKILL");
    await Promise.all(s.receivers.map((r) => r.close()));
    fs.rmSync(s.dataDir, { recursive: true, force: true });
  }
});

/** The Livepeer-Signature of a received delivery, checked as a receiver would. */
function signatureValid(r: Received, secret: string): boolean {
  const header = String(r.headers["livepeer-signature"] ?? "");
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!m) return false;
  const expected = crypto.createHmac("sha256", secret).update(r.raw).digest("hex");
  return m[2] === expected && Number(m[1]) === r.body.timestamp;
}

/** Deliveries to one webhook: its attempts, those acknowledged, and the events acknowledged. */
const toHook = (rx: Receiver, hookId: string) => rx.received.filter((r) => r.body?.webhookId === hookId);
const acked = (rx: Receiver, hookId: string) => toHook(rx, hookId).filter((r) => r.status >= 200 && r.status < 300);
const ackedNames = (rx: Receiver, hookId: string) => acked(rx, hookId).map((r) => r.body.event as string);
/** One delivery of one event to one webhook. */
const deliveryKey = (r: Received) => `${r.body.webhookId}/${r.body.id}`;

/** The server's own delivery log of a webhook: every attempt it made and recorded. */
async function attemptLog(api: Api, hookId: string): Promise<{ eventId: string; event: string; success: boolean; attempt: number }[]> {
  const res = await api("GET", `/webhook/${hookId}/log?limit=1000`);
  expect(res.status).toBe(200);
  return res.body;
}

/** A stream with record on, pushed to until it is active and `recordedSeconds` are recorded. */
async function liveRecordedStream(f: Started, server: ServerProcess, api: Api, name: string, recordedSeconds = 3, more: Record<string, unknown> = {}) {
  const stream = (await api("POST", "/stream", { name, record: true, ...more })).body;
  expect(stream.id).toBeDefined();
  // Longer than the test needs: the fault, not the end of the push, ends the session.
  const push = pushTestStream(`${server.rtmpUrl}/${stream.streamKey}`, { seconds: 30 });
  f.pushes.push(push);
  await waitFor("isActive", async () => (await api("GET", `/stream/${stream.id}`)).body.isActive, 30_000, 200);
  await waitFor(`${recordedSeconds} s recorded`, async () => (await api("GET", `/stream/${stream.id}`)).body.sourceSegmentsDuration >= recordedSeconds, 20_000, 200);
  return { stream, push };
}

/** SIGTERM and how long the server took to exit (or fails after `limitMs`). */
async function terminate(server: ServerProcess, limitMs: number): Promise<ServerExit & { afterMs: number }> {
  const sent = performance.now();
  process.kill(server.pid, "SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([
    server.exited,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no exit ${limitMs} ms after SIGTERM; its log ends:\n${server.log().slice(-3000)}`)), limitMs))),
  ]).finally(() => clearTimeout(timer));
  return { ...exit, afterMs: Math.round(exit.at - sent) };
}

/** The one session of a stream once its recording is ready (or failed: the test then says why). */
async function finalizedSession(api: Api, streamId: string) {
  return waitFor(
    "the recording finalized",
    async () => {
      const list = (await api("GET", `/stream/${streamId}/sessions`)).body;
      return list?.length === 1 && ["ready", "failed"].includes(list[0].recordingStatus) && list[0];
    },
    FINALIZE_MS,
    250,
  );
}

describe("server faults", () => {
  it("SIGKILL during a live recorded session with deliveries pending: after a restart nothing is stuck, lost or repeated", async () => {
    const f = fixture();
    // Webhook "steady" acknowledges everything. Webhook "flaky" acknowledges its first delivery,
    // then answers 503 until the restart: the deliveries behind it are pending at the kill.
    let receiverBack = false;
    let flakyCalls = 0;
    const rx = await startReceiver(({ path }) => (!path.endsWith("/flaky") || receiverBack || ++flakyCalls === 1 ? 200 : 503));
    f.receivers.push(rx);

    const first = await startServerProcess(f.dataDir, ENV);
    f.servers.push(first);
    const key = first.key!;
    expect(key).toBeDefined();
    const api = apiClient(first.apiUrl, key);
    const secrets: Record<string, string> = {};
    const hook = async (name: string) => {
      const res = await api("POST", "/webhook", { name, url: `${rx.url}/${name}`, events: EVENTS, sharedSecret: `${name}-secret` });
      expect(res.status).toBe(200);
      secrets[res.body.id] = `${name}-secret`;
      return res.body.id as string;
    };
    const steady = await hook("steady");
    const flaky = await hook("flaky");

    // A profile: the run is an ffmpeg (a copied source is packaged with no process), left behind by the kill.
    const { stream, push } = await liveRecordedStream(f, first, api, "killed mid-recording", 3, { profiles: [{ name: "180p", width: 320, height: 180, fps: 30, bitrate: 300_000 }] });
    await rx.waitFor(
      () =>
        ["stream.started", "recording.started"].every((e) => ackedNames(rx, steady).includes(e)) &&
        ackedNames(rx, flaky).includes("stream.started") &&
        toHook(rx, flaky).filter((r) => r.body.event === "recording.started" && r.status === 503).length >= 2,
      "stream.started and recording.started acknowledged, and flaky's recording.started refused twice",
      20_000,
    );
    // The kill lands between attempts, none in flight: every attempt the receiver answered is
    // recorded by the server (what was acknowledged is settled, what was refused is waiting),
    // and flaky's last refusal is under 0.5 s old, so its next retry is at least 1.1 s away
    // (gaps of 2 s, 4 s… ± 20 %). A kill during an attempt would leave its job leased for 15 s
    // (the embedded queue's lease): a later delivery, not the case under test here.
    await waitFor(
      "the server's log to hold every attempt the receiver saw, just after a refusal",
      async () => {
        const last = toHook(rx, flaky).at(-1)!;
        if (performance.now() - last.at > 500) return false;
        const logged = [(await attemptLog(api, steady)).length, (await attemptLog(api, flaky)).length];
        return logged[0] === toHook(rx, steady).length && logged[1] === toHook(rx, flaky).length && last === toHook(rx, flaky).at(-1);
      },
      15_000,
      20,
    );

    // The first run's ffmpeg outlives a SIGKILL of the server. A pipeline usually exits by itself
    // when its RTMP source goes; this one hangs (stopped), as a stuck one would.
    const leftovers = ffmpegPidsMentioning(f.dataDir);
    expect(leftovers.length).toBeGreaterThan(0);
    process.kill(leftovers[0]!, "SIGSTOP");
    process.kill(first.pid, "SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    const killedAt = Date.now();
    if (push.child.exitCode === null) push.child.kill("SIGTERM");
    await push.exited;

    const seenBeforeKill = rx.received.length;
    const ackedBeforeKill = new Set(rx.received.filter((r) => r.status === 200).map(deliveryKey));
    // steady: stream.started, recording.started; flaky: stream.started.
    expect(ackedBeforeKill.size).toBe(3);
    const pendingAtKill = toHook(rx, flaky).find((r) => r.body.event === "recording.started")!.body.id as string;
    receiverBack = true;

    const second = await startServerProcess(f.dataDir, ENV);
    f.servers.push(second);
    // The restart killed what the first run left running, before anything else.
    expect(ffmpegPidsMentioning(f.dataDir).filter((pid) => leftovers.includes(pid))).toEqual([]);
    await waitFor("the reaping logged", () => second.log().includes("killed an ffmpeg left running by a previous run"), 5000);
    const api2 = apiClient(second.apiUrl, key);
    // Recovery runs before the server listens: nothing is active from the first request on.
    const parent = (await api2("GET", `/stream/${stream.id}`)).body;
    expect(parent.isActive).toBe(false);
    const sessions = (await api2("GET", `/stream/${stream.id}/sessions`)).body;
    expect(sessions).toHaveLength(1);
    expect(sessions[0].isActive).toBe(false);
    expect((await api2("GET", `/stream/${sessions[0].id}`)).body.isActive).toBe(false);

    const session = await finalizedSession(api2, stream.id);
    expect(session.recordingStatus).toBe("ready");
    const mp4 = await probe(session.mp4Url);
    expect(mp4.duration).toBeGreaterThanOrEqual(2.5);
    expect(mp4.streams.map((s) => s.codec_type).sort()).toEqual(["audio", "video"]);

    await rx.waitFor(
      () => [steady, flaky].every((h) => EVENTS.every((e) => ackedNames(rx, h).includes(e))),
      "all five events acknowledged by both webhooks",
      FINALIZE_MS,
    );
    // Settled: every attempt the receiver saw is in the server's log, none still on its way.
    await waitFor(
      "every attempt logged",
      async () => (await attemptLog(api2, steady)).length === toHook(rx, steady).length && (await attemptLog(api2, flaky)).length === toHook(rx, flaky).length,
      10_000,
    );

    for (const h of [steady, flaky]) {
      // Each event acknowledged exactly once per webhook, the five of them.
      const ids = acked(rx, h).map((r) => r.body.id as string);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ackedNames(rx, h).sort()).toEqual([...EVENTS].sort());
      // All of them about the one session; stream.idle (raised by the recovery) pairs with stream.started.
      expect(new Set(acked(rx, h).map((r) => r.body.payload.sessionId))).toEqual(new Set([session.id]));
      const names = ackedNames(rx, h);
      expect(names.indexOf("stream.started")).toBeLessThan(names.indexOf("stream.idle"));
      // Recovery raises them in the order a normal end does: the session's end, then its recording's.
      expect(names.indexOf("stream.idle")).toBeLessThan(names.indexOf("recording.waiting"));
      expect(names.indexOf("recording.waiting")).toBeLessThan(names.indexOf("recording.ready"));
      expect(acked(rx, h).find((r) => r.body.event === "stream.idle")!.body.createdAt).toBeGreaterThanOrEqual(killedAt);
    }
    // What was acknowledged before the kill never came again.
    expect(rx.received.slice(seenBeforeKill).filter((r) => ackedBeforeKill.has(deliveryKey(r))).map(deliveryKey)).toEqual([]);
    // The delivery pending at the kill was delivered after the restart: the same event, by id.
    const pendingAcks = acked(rx, flaky).filter((r) => r.body.id === pendingAtKill);
    expect(pendingAcks).toHaveLength(1);
    expect(rx.received.indexOf(pendingAcks[0]!)).toBeGreaterThanOrEqual(seenBeforeKill);
    // Every attempt, before and after the kill, signed with its webhook's secret.
    expect(rx.received.filter((r) => !signatureValid(r, secrets[r.body.webhookId]!)).map(deliveryKey)).toEqual([]);

    // The killed server's ffmpeg lost its RTMP input with it and ended; the remux ended too.
    await waitFor("no ffmpeg of either server", () => ffmpegPidsMentioning(f.dataDir).length === 0, 15_000);
    expect((await terminate(second, 15_000)).code).toBe(0);
  }, 150_000);

  it("SIGTERM during a live recorded session: exits 0 within 10 s, and the restart finds it all closed", async () => {
    const f = fixture();
    const rx = await startReceiver(() => 200);
    f.receivers.push(rx);
    const first = await startServerProcess(f.dataDir, ENV);
    f.servers.push(first);
    const key = first.key!;
    const api = apiClient(first.apiUrl, key);
    const hook = (await api("POST", "/webhook", { name: "rx", url: rx.url, events: EVENTS, sharedSecret: "term-secret" })).body.id as string;

    const { stream, push } = await liveRecordedStream(f, first, api, "terminated");
    await rx.waitFor(() => ["stream.started", "recording.started"].every((e) => ackedNames(rx, hook).includes(e)), "stream.started and recording.started", 20_000);

    const exit = await terminate(first, 15_000);
    const exitedAt = Date.now();
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    expect(exit.afterMs).toBeLessThan(10_000);
    // Its pipeline (and any remux) stopped with it: nothing to wait for.
    expect(ffmpegPidsMentioning(f.dataDir)).toEqual([]);
    // The publisher was disconnected by the shutdown, long before the end of its 30 s.
    await waitFor("the publisher disconnected", () => push.child.exitCode !== null || push.child.signalCode !== null, 10_000);

    const second = await startServerProcess(f.dataDir, ENV);
    f.servers.push(second);
    const api2 = apiClient(second.apiUrl, key);
    expect((await api2("GET", `/stream/${stream.id}`)).body.isActive).toBe(false);
    const session = await finalizedSession(api2, stream.id);
    expect(session.isActive).toBe(false);
    expect(session.recordingStatus).toBe("ready");
    expect((await probe(session.mp4Url)).duration).toBeGreaterThanOrEqual(2.5);

    await rx.waitFor(() => EVENTS.every((e) => ackedNames(rx, hook).includes(e)), "all five events", FINALIZE_MS);
    await waitFor("every attempt logged", async () => (await attemptLog(api2, hook)).length === toHook(rx, hook).length, 10_000);
    // One stream.idle for the one stream.started, raised by the shutdown itself (before the
    // exit), not left for the next start's crash recovery; each event acknowledged once.
    const ids = acked(rx, hook).map((r) => r.body.id as string);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ackedNames(rx, hook).sort()).toEqual([...EVENTS].sort());
    const idle = acked(rx, hook).find((r) => r.body.event === "stream.idle")!;
    expect(idle.body.payload.sessionId).toBe(session.id);
    expect(idle.body.createdAt).toBeLessThanOrEqual(exitedAt);
    expect(rx.received.every((r) => signatureValid(r, "term-secret"))).toBe(true);
    await waitFor("no ffmpeg left", () => ffmpegPidsMentioning(f.dataDir).length === 0, 10_000);
    expect((await terminate(second, 15_000)).code).toBe(0);
  }, 120_000);

  it("SIGTERM while a delivery hangs on a receiver that does not answer: exits within 10 s and the delivery is not lost", async () => {
    const f = fixture();
    // The first recording.started hangs for longer than any shutdown may take; the rest is quick.
    let hung = false;
    const rx = await startReceiver(({ body }) => {
      if (body?.event !== "recording.started" || hung) return 200;
      hung = true;
      return "hang";
    });
    f.receivers.push(rx);
    const first = await startServerProcess(f.dataDir, ENV);
    f.servers.push(first);
    const key = first.key!;
    const api = apiClient(first.apiUrl, key);
    const hook = (await api("POST", "/webhook", { name: "slow", url: rx.url, events: EVENTS, sharedSecret: "slow-secret" })).body.id as string;

    // SIGTERM as soon as the delivery is sent: the shutdown cuts it after its 3 s of grace.
    const { stream } = await liveRecordedStream(f, first, api, "slow receiver", 0);
    await rx.waitFor(() => toHook(rx, hook).some((r) => r.body.event === "recording.started"), "recording.started on its way", 20_000);
    const inFlight = toHook(rx, hook).find((r) => r.body.event === "recording.started")!.body.id as string;

    const exit = await terminate(first, 15_000);
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    expect(exit.afterMs).toBeLessThan(10_000);
    expect(ffmpegPidsMentioning(f.dataDir)).toEqual([]);

    const second = await startServerProcess(f.dataDir, ENV);
    f.servers.push(second);
    const api2 = apiClient(second.apiUrl, key);
    expect((await api2("GET", `/stream/${stream.id}`)).body.isActive).toBe(false);
    await rx.waitFor(() => EVENTS.every((e) => toHook(rx, hook).some((r) => r.body.event === e)), "all five events", FINALIZE_MS);
    // Settled: every event delivered, and every attempt made (before or after the restart) logged.
    const log = await waitFor(
      "every event delivered and every attempt logged",
      async () => {
        const entries = await attemptLog(api2, hook);
        const settled = entries.length === toHook(rx, hook).length && EVENTS.every((e) => entries.some((l) => l.event === e && l.success));
        return settled ? entries : undefined;
      },
      FINALIZE_MS,
    );
    // The delivery in flight at SIGTERM succeeded, once: cut at shutdown (a failed attempt,
    // logged) and sent again after the restart.
    const ofInFlight = log.filter((e) => e.eventId === inFlight);
    expect(ofInFlight.filter((e) => e.success)).toHaveLength(1);
    expect(ofInFlight.filter((e) => !e.success)).toHaveLength(1);
    expect(toHook(rx, hook).filter((r) => r.body.id === inFlight)).toHaveLength(ofInFlight.length);
    expect(new Set(log.filter((e) => e.success).map((e) => e.eventId)).size).toBe(EVENTS.length);
    expect((await finalizedSession(api2, stream.id)).recordingStatus).toBe("ready");
    expect(rx.received.every((r) => signatureValid(r, "slow-secret"))).toBe(true);
    await waitFor("no ffmpeg left", () => ffmpegPidsMentioning(f.dataDir).length === 0, 10_000);
    expect((await terminate(second, 15_000)).code).toBe(0);
  }, 120_000);
});

describe("one server per data directory", () => {
  it("a second server on the same DATA_DIR is refused with a clear message; the first goes on", async () => {
    const f = fixture();
    const first = await startServerProcess(f.dataDir, ENV);
    f.servers.push(first);
    await expect(startServerProcess(f.dataDir, ENV)).rejects.toThrow(new RegExp(`another onair is already running on the data directory ${f.dataDir} \\(pid ${first.pid}\\)`));
    expect((await fetch(`${first.apiUrl.replace("/api", "")}/healthz`)).status).toBe(200);
  });
});
