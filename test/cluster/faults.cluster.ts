import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { s3Client } from "../../src/storage";
import { FFPROBE, ffmpegPidsMentioning, pushTestStream, waitFor } from "../helpers/media";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { tempDir } from "../helpers/server";
import { deleteKeys, uniquePrefix } from "../queue/redis";
import { client, pauseNode, processes, reconnectingPublisher, clusterEnv, rtmpBalancer, startNode, type Node } from "../helpers/clusterNodes";
import { throwAwayDatabase, type ThrowAwayDatabase } from "../helpers/postgres";
import {
  activeAgreesWithPlayback,
  atMostOneOpenSession,
  atMostOneServer,
  readyRecordingsCover,
  recordingNeverReopens,
  startedIdleAlternate,
  type LifecycleEvent,
  type OpenSessionsSample,
  type PlaybackObservation,
  type RecordingCheck,
  type RecordingSample,
  type ServingSample,
  type Violation,
} from "./invariants";

// A schedule of faults against three onair processes on one PostgreSQL database and bucket:
//   A: api + worker      B, C: api + ingest      an RTMP balancer in front of B and C whose
// order the test switches. Each step injects one fault and ends by checking the invariants of
// ./invariants.ts over what was sampled every 200 ms meanwhile (which node runs a live ffmpeg
// for the stream, which sessions are open, recording states) and over the webhooks received.
// A step reports every invariant that failed, not only the first.

const BUCKET = "onair-faults";
const LEASE_SECONDS = 3;
const POLL_SECONDS = 1;
const SAMPLE_MS = 200;

let work: string;
let db: ThrowAwayDatabase;
let s3: S3rver;
let s3Port: number;
let receiver: Receiver;
let prefix: string;
let a: Node, b: Node, c: Node;
let viaA: ReturnType<typeof client>;
let balancer: Awaited<ReturnType<typeof rtmpBalancer>>;
/** The balancer's order: the first node that accepts gets the connection. */
let order: Node[] = [];
const nodes: Node[] = [];
/** The nodes that may serve media (the I1 sampler looks for their live ffmpeg). */
const ingest: Node[] = [];
const stops: (() => Promise<unknown> | unknown)[] = [];
/** Every step's violations, printed together at the end: which checker failed where. */
const summary: string[] = [];
/** Recorded sessions, by the step they belong to, checked for their MP4 at the end. */
const recorded = new Map<string, string>();
/** Sessions whose recording was ready at some sample: their MP4 is checked even if the status moved on. */
const everReady = new Set<string>();

function env(roles: string, extra: Record<string, string> = {}): Record<string, string> {
  return clusterEnv(
    { roles, databaseUrl: db.url, redisPrefix: prefix, s3Port, bucket: BUCKET, leaseSeconds: LEASE_SECONDS },
    // The test reads isActive through A often: a generous bucket.
    { CONTROL_POLL_SECONDS: String(POLL_SECONDS), API_RATE_LIMIT: "50", API_RATE_BURST: "500", ...extra },
  );
}

beforeAll(async () => {
  work = tempDir("onair-faults-");
  db = await throwAwayDatabase("faults");
  s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: path.join(work, "s3"), configureBuckets: [{ name: BUCKET, configs: [] }] });
  s3Port = (await s3.run()).port;
  receiver = await startReceiver(() => 200);
  prefix = uniquePrefix("faults");
  a = await startNode("A", path.join(work, "A"), env("api,worker"));
  nodes.push(a);
  [b, c] = await Promise.all([startNode("B", path.join(work, "B"), env("api,ingest")), startNode("C", path.join(work, "C"), env("api,ingest"))]);
  nodes.push(b, c);
  ingest.push(b, c);
  viaA = client(a.apiUrl, a.key!);
  order = [b, c];
  balancer = await rtmpBalancer(() => order.map((n) => n.rtmpPort));
  expect((await viaA("POST", "/webhook", { name: "all", url: receiver.url })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  await balancer?.close();
  await Promise.all(nodes.map((n) => n.stop()));
  for (const n of nodes) n.killGroup();
  await receiver?.close();
  await s3?.close();
  await deleteKeys(prefix);
  await db?.drop();
  console.log(`fault schedule: invariants that failed\n${summary.length ? summary.join("\n") : "(none)"}`);
  expect(ffmpegPidsMentioning(work)).toEqual([]);
  fs.rmSync(work, { recursive: true, force: true });
}, 60_000);

interface Stream {
  id: string;
  playbackId: string;
  streamKey: string;
}

/** One step: its clock, what happened when, and what the sampler saw. */
class Step {
  readonly t0 = performance.now();
  readonly timeline: string[] = [];
  readonly streams: Stream[] = [];
  readonly serving: ServingSample[] = [];
  readonly open: OpenSessionsSample[] = [];
  readonly recordings: RecordingSample[] = [];
  readonly violations: Violation[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<void> | undefined;

  constructor(readonly name: string) {
    this.timer = setInterval(() => void (this.sampling ??= this.sample().finally(() => (this.sampling = undefined))), SAMPLE_MS);
    stops.push(() => this.stopSampling());
  }

  now(): number {
    return performance.now() - this.t0;
  }

  mark(what: string): void {
    this.timeline.push(`+${(this.now() / 1000).toFixed(1)} s ${what}`);
  }

  async stopSampling(): Promise<void> {
    clearInterval(this.timer);
    await this.sampling;
  }

  private async sample(): Promise<void> {
    if (this.streams.length === 0) return;
    const at = this.now();
    const live = processes().filter((p) => p.comm === "ffmpeg" && p.state !== "T" && p.state !== "Z");
    for (const s of this.streams) {
      const on = ingest.filter((n) => {
        const dir = path.join(work, n.name) + path.sep;
        return live.some((p) => (p.cwd.startsWith(dir) || p.args.includes(dir)) && (p.cwd.includes(s.playbackId) || p.args.includes(s.playbackId)));
      });
      this.serving.push({ at, streamId: s.id, nodes: on.map((n) => n.name) });
    }
    try {
      const rows = await db.query<{ id: string; parent_id: string; node_id: string; ended_at: string | null; recording_status: string | null }>(
        "SELECT id, parent_id, node_id, ended_at, recording_status FROM sessions WHERE parent_id = ANY($1) ORDER BY seq",
        [this.streams.map((s) => s.id)],
      );
      for (const s of this.streams) {
        this.open.push({ at, streamId: s.id, open: rows.filter((r) => r.parent_id === s.id && r.ended_at === null).map((r) => ({ id: r.id, node: r.node_id })) });
      }
      for (const r of rows) {
        this.recordings.push({ at, sessionId: r.id, status: r.recording_status });
        if (r.recording_status === "ready") everReady.add(r.id);
      }
    } catch {
      // the test's own pool is not under test; a missed sample is only a gap
    }
  }
}

/**
 * One small rung: each session's run is an ffmpeg, which the I1 sampler watches for (a copied
 * source is packaged with no process, and would leave it nothing to see).
 */
const SAMPLED_PROFILES = [{ name: "90p", width: 160, height: 90, fps: 15, bitrate: 100_000 }];

async function newStream(step: Step, name: string, extra: Record<string, unknown> = {}): Promise<Stream> {
  const res = await viaA("POST", "/stream", { name, record: true, profiles: SAMPLED_PROFILES, ...extra });
  expect(res.status).toBe(201);
  const s: Stream = { id: res.body.id, playbackId: res.body.playbackId, streamKey: res.body.streamKey };
  step.streams.push(s);
  return s;
}

const rtmp = (s: Stream) => `rtmp://127.0.0.1:${balancer.port}/live/${s.streamKey}`;
const openSession = async (streamId: string) =>
  (await db.query<{ id: string; node_id: string }>("SELECT id, node_id FROM sessions WHERE parent_id = $1 AND ended_at IS NULL ORDER BY seq", [streamId]))[0];
const dbActive = async (streamId: string) => (await db.query<{ is_active: number }>("SELECT is_active FROM streams WHERE id = $1", [streamId]))[0]?.is_active === 1;
const recordedSeconds = async (streamId: string) => Number((await db.query<{ d: number }>("SELECT source_segments_duration AS d FROM streams WHERE id = $1", [streamId]))[0]?.d ?? 0);

/** A reconnecting encoder on `s` through the balancer, once its session is live on `on` and has recorded a few seconds. */
async function publish(step: Step, s: Stream, on: Node): Promise<{ publisher: ReturnType<typeof reconnectingPublisher>; sessionId: string }> {
  const publisher = reconnectingPublisher(rtmp(s), 1000);
  stops.push(() => publisher.stop());
  const session = await waitFor(`a session of ${s.id} on ${on.name}`, async () => {
    const o = await openSession(s.id);
    return o?.node_id === on.name ? o : undefined;
  }, 20_000, 200);
  await waitFor(`${s.id} active`, () => dbActive(s.id), 15_000, 200);
  await waitFor(`${s.id} recorded 3 s`, async () => (await recordedSeconds(s.id)) >= 3, 20_000, 250);
  recorded.set(session.id, step.name);
  step.mark(`publishing ${s.id}, session ${session.id} on ${on.name}`);
  return { publisher, sessionId: session.id };
}

/** What A says (isActive) and serves (the first rendition's media playlist) now. */
async function observe(step: Step, s: Stream): Promise<PlaybackObservation> {
  const at = step.now();
  const api = await viaA("GET", `/stream/${s.id}`);
  let status = 0;
  let text = "";
  try {
    const res = await fetch(`${a.base}/hls/${s.playbackId}/0/index.m3u8`, { signal: AbortSignal.timeout(5_000) });
    status = res.status;
    text = await res.text();
  } catch {
    status = -1;
  }
  const uris = status === 200 ? text.split("\n").filter((l) => l.trim() && !l.startsWith("#")) : [];
  return { at, isActive: api.status === 200 ? Boolean(api.body.isActive) : undefined, status, endlist: text.includes("#EXT-X-ENDLIST"), lastSegment: uris.at(-1) };
}

/**
 * I5 once things settle: observes every 1.5 s (a 1 s segment appears in between) until isActive
 * agrees with what plays through A, or `timeoutMs` passes; then the violation, with what was seen.
 */
async function settled(step: Step, s: Stream, what: string, timeoutMs = 15_000): Promise<{ ms: number; last: PlaybackObservation | undefined }> {
  const start = step.now();
  const seen: PlaybackObservation[] = [await observe(step, s)];
  for (;;) {
    await new Promise((r) => setTimeout(r, 1_500));
    seen.push(await observe(step, s));
    const v = activeAgreesWithPlayback(seen, what);
    if (v.length === 0) return { ms: step.now() - start, last: seen.at(-1) };
    if (step.now() - start > timeoutMs) {
      step.violations.push(...v.map((x) => ({ ...x, detail: `${x.detail} (no agreement within ${timeoutMs / 1000} s)` })));
      return { ms: NaN, last: seen.at(-1) };
    }
  }
}

function lifecycleEvents(step: Step): LifecycleEvent[] {
  const ids = new Set(step.streams.map((s) => s.id));
  return receiver.received
    .filter((r) => ids.has(r.body?.stream?.id) && (r.body?.event === "stream.started" || r.body?.event === "stream.idle"))
    .map((r) => ({ id: r.body.id, name: r.body.event, streamId: r.body.stream.id, sessionId: r.body.payload?.sessionId, at: r.at - step.t0 }));
}

/** Ends a step: the samplers' invariants (I1, I2, I4 history), I3 once the webhooks are in, and one report of all violations. */
async function finish(step: Step): Promise<void> {
  await step.stopSampling();
  const ids = step.streams.map((s) => s.id);
  const raised = await db.query<{ id: string }>("SELECT id FROM events WHERE stream_id = ANY($1) AND name IN ('stream.started', 'stream.idle')", [ids]);
  await receiver
    .waitFor((r) => raised.every((e) => r.some((x) => x.body?.id === e.id)), `the webhooks of ${step.name}`, 15_000)
    .catch((err: Error) => step.violations.push({ invariant: "I3", detail: `not all stream.started/idle delivered: ${err.message}` }));
  step.violations.push(...atMostOneServer(step.serving), ...atMostOneOpenSession(step.open), ...startedIdleAlternate(lifecycleEvents(step)), ...recordingNeverReopens(step.recordings));
  // The I1 sampler must have seen the pipelines it watches, or its silence proves nothing.
  const seen = step.serving.filter((x) => x.nodes.length > 0).length;
  step.mark(`I1 sampler: ${step.serving.length} samples, ${seen} with a live ffmpeg; I2 sampler: ${step.open.length} samples`);
  if (step.streams.length > 0 && seen === 0) step.violations.push({ invariant: "I1", detail: "the sampler never saw a live ffmpeg of the step's streams: it watches nothing" });
  const failed = [...new Set(step.violations.map((v) => v.invariant))].sort();
  summary.push(`${step.name}: ${failed.length ? failed.join(", ") : "all held"}`);
  for (const v of step.violations) summary.push(`  ${v.invariant} ${v.detail}`);
  const report = [`${step.name}: ${failed.join(", ") || "all held"}`, "timeline:", ...step.timeline.map((t) => `  ${t}`), ...step.violations.map((v) => `${v.invariant}: ${v.detail}`)].join("\n");
  console.log(report);
  expect(step.violations).toEqual([]);
}

/** Stops the encoder and waits until no session of `s` is open (or records that it stayed open). */
async function endPublishing(step: Step, s: Stream, publisher: { stop(): Promise<void> }): Promise<void> {
  await publisher.stop();
  step.mark("publisher stopped");
  await waitFor(`${s.id}'s session to end`, async () => (await openSession(s.id)) === undefined, 10_000, 200).catch(() =>
    step.violations.push({ invariant: "step", detail: `stream ${s.id}: a session still open 10 s after its publisher stopped` }),
  );
  await settled(step, s, "after the publisher stopped");
}

/** SIGSTOP of the holder (and its ffmpeg children) for twice the lease; `meanwhile` runs while it is paused. */
async function pauseHolder(step: Step, holder: Node, meanwhile: () => Promise<void> = async () => {}): Promise<void> {
  const paused = pauseNode(holder);
  const at = step.now();
  stops.push(() => paused.resume());
  step.mark(`SIGSTOP ${holder.name} (${paused.pids.length} processes)`);
  await meanwhile();
  await new Promise((r) => setTimeout(r, Math.max(0, at + 2 * LEASE_SECONDS * 1000 - step.now())));
  paused.resume();
  step.mark(`SIGCONT ${holder.name}`);
}

it("S1: the holder paused for twice its lease, the publisher staying with it", async () => {
  const step = new Step("S1 pause");
  order = [b, c];
  const s = await newStream(step, "S1");
  const { publisher } = await publish(step, s, b);
  await pauseHolder(step, b);
  const t = step.now();
  const consistent = await settled(step, s, "after SIGCONT");
  step.mark(`consistent after ${(consistent.ms / 1000).toFixed(1)} s`);
  const playing = await waitFor("S1 playing again", async () => (await openSession(s.id)) && (await dbActive(s.id)), 15_000, 200).then(
    () => step.now() - t,
    () => NaN,
  );
  console.log(`S1: SIGCONT → consistent ${(consistent.ms / 1000).toFixed(1)} s; SIGCONT → a session open and active ${(playing / 1000).toFixed(1)} s`);
  await endPublishing(step, s, publisher);
  await finish(step);
});

it("S2: the holder paused, the publisher's reconnects sent to the other ingest node", async () => {
  const step = new Step("S2 pause + move");
  order = [b, c];
  const s = await newStream(step, "S2");
  const { publisher, sessionId } = await publish(step, s, b);
  let live: Promise<{ id: string; ms: number } | undefined> = Promise.resolve(undefined);
  await pauseHolder(step, b, async () => {
    order = [c, b];
    balancer.cut();
    const cutAt = step.now();
    step.mark("balancer → C first; publisher's connection cut");
    live = waitFor("a session of S2 on C", async () => {
      const o = await openSession(s.id);
      return o?.node_id === "C" && (await dbActive(s.id)) ? { id: o.id, ms: step.now() - cutAt } : undefined;
    }, 20_000, 200).catch(() => undefined);
  });
  const onC = await live;
  step.mark(onC ? `session ${onC.id} live on C ${(onC.ms / 1000).toFixed(1)} s after the cut` : "no session on C within 20 s");
  const consistent = await settled(step, s, "after SIGCONT with the publisher on C");
  console.log(`S2: cut → live on C ${onC ? (onC.ms / 1000).toFixed(1) : "never"} s (old session ${sessionId} on paused B); SIGCONT → consistent ${(consistent.ms / 1000).toFixed(1)} s`);
  await endPublishing(step, s, publisher);
  await finish(step);
});

it("S3: terminate sent through A while the holder's notice connection is cut", async () => {
  const step = new Step("S3 deaf terminate");
  order = [b, c];
  const s = await newStream(step, "S3");
  // An encoder that does not come back: the session must end and stay ended.
  const push = pushTestStream(rtmp(s), { seconds: 60, fps: 15 });
  stops.push(() => push.child.kill("SIGKILL"));
  const session = await waitFor("S3 live on B", async () => {
    const o = await openSession(s.id);
    return o?.node_id === "B" && (await dbActive(s.id)) ? o : undefined;
  }, 20_000, 200);
  recorded.set(session.id, step.name);
  await waitFor("S3 recorded 3 s", async () => (await recordedSeconds(s.id)) >= 3, 20_000, 250);
  const cut = await db.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'onair-notices B' AND datname = current_database()");
  step.mark(`cut ${cut.length} notice connection(s) of B`);
  expect((await viaA("DELETE", `/stream/${s.id}/terminate`)).status).toBe(204);
  step.mark("DELETE /terminate through A");
  const t = step.now();
  const endedIn = await waitFor("S3's session to end", async () => {
    const [r] = await db.query<{ ended_at: string | null }>("SELECT ended_at FROM sessions WHERE id = $1", [session.id]);
    return r?.ended_at !== null;
  }, 4 * POLL_SECONDS * 1000 + 2_000, 100).then(() => step.now() - t, () => NaN);
  step.mark(Number.isNaN(endedIn) ? "session still open" : `session ended after ${endedIn} ms`);
  if (Number.isNaN(endedIn)) step.violations.push({ invariant: "step", detail: `session ${session.id} still open ${4 * POLL_SECONDS + 2} s after a terminate sent while B's notice connection was cut` });
  console.log(`S3: terminate (notices cut) → session ended ${(endedIn / 1000).toFixed(1)} s`);
  await settled(step, s, "after the terminate");
  push.child.kill("SIGKILL");
  await push.exited;
  await finish(step);
});

it("S4: every PostgreSQL connection of the holder cut mid-session", async () => {
  const step = new Step("S4 pg cut");
  order = [b, c];
  const s = await newStream(step, "S4");
  const { publisher } = await publish(step, s, b);
  const cut = await db.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name IN ('onair B', 'onair-notices B') AND datname = current_database()");
  step.mark(`cut ${cut.length} connections of B`);
  if (cut.length < 2) step.mark("(fewer than a pool and a notice connection were found: is the pool named 'onair B'?)");
  // Playing on, or ended cleanly (and then taken again by the publisher's reconnect): either settles.
  await new Promise((r) => setTimeout(r, 2 * LEASE_SECONDS * 1000));
  const consistent = await settled(step, s, "after the cut");
  console.log(`S4: connections cut → consistent ${(consistent.ms / 1000).toFixed(1)} s after ${2 * LEASE_SECONDS} s; the stream ${consistent.last?.isActive ? "plays on" : "ended"}`);
  await endPublishing(step, s, publisher);
  await finish(step);
});

it("S5: nodes whose clocks are off by more than the lease neither lose their streams nor end others'", async () => {
  const step = new Step("S5 clock skew");
  const [late, early] = await Promise.all([
    startNode("D", path.join(work, "D"), env("api,ingest", { NODE_CLOCK_OFFSET_MS: String(-10_000) })),
    startNode("E", path.join(work, "E"), env("api,ingest", { NODE_CLOCK_OFFSET_MS: String(10_000) })),
  ]);
  nodes.push(late, early);
  ingest.push(late, early);
  step.mark("D (clock -10 s) and E (clock +10 s) started");
  const placed: { s: Stream; on: Node; sessionId: string; publisher: { stop(): Promise<void> } }[] = [];
  for (const on of [late, early, b]) {
    order = [on];
    const s = await newStream(step, `S5 on ${on.name}`);
    const { publisher, sessionId } = await publish(step, s, on);
    placed.push({ s, on, sessionId, publisher });
  }
  order = [b, c];
  // Three leases with all three live: nobody's session may end or move.
  await new Promise((r) => setTimeout(r, 3 * LEASE_SECONDS * 1000));
  for (const p of placed) {
    const o = await openSession(p.s.id);
    if (o?.id !== p.sessionId) {
      const [r] = await db.query<{ ended_at: string | null; end_reason: string | null }>("SELECT ended_at, end_reason FROM sessions WHERE id = $1", [p.sessionId]);
      step.violations.push({ invariant: "step", detail: `session ${p.sessionId} on ${p.on.name} did not survive the skew: now ${o ? `${o.id}@${o.node_id}` : "none open"}; ended: ${r?.end_reason ?? "-"}` });
    }
    await settled(step, p.s, `stream on ${p.on.name} during the skew`);
  }
  for (const p of placed) await endPublishing(step, p.s, p.publisher);
  await finish(step);
  // Back to A, B, C: two fewer transcoders on a small machine.
  await Promise.all([late.stop(), early.stop()]);
  ingest.splice(ingest.indexOf(late), 1);
  ingest.splice(ingest.indexOf(early), 1);
});

it("S6: the publisher's reconnect lands on the other ingest node inside the reconnect window", async () => {
  const step = new Step("S6 move in window");
  order = [b, c];
  // The stream's own window wins over the nodes' RECONNECT_WINDOW_SECONDS=0.
  const s = await newStream(step, "S6", { reconnectWindow: 10 });
  const { publisher, sessionId } = await publish(step, s, b);
  /** Cuts the publisher's connection with `first` first in the balancer: ms until the same session plays again. */
  const reconnect = async (first: Node, what: string) => {
    const started = lifecycleEvents(step).filter((e) => e.name === "stream.started").length;
    order = first === b ? [b, c] : [c, b];
    balancer.cut();
    const t = step.now();
    step.mark(`balancer → ${first.name} first; publisher's connection cut (${what})`);
    await waitFor(`S6 active again (${what})`, async () => !(await dbActive(s.id)) || undefined, 10_000, 50).catch(() => undefined);
    const back = await waitFor(`S6 playing again (${what})`, async () => {
      const o = await openSession(s.id);
      return o?.id === sessionId && (await dbActive(s.id)) ? o : undefined;
    }, 20_000, 100).catch(() => undefined);
    const ms = step.now() - t;
    step.mark(back ? `session ${sessionId} active again after ${ms} ms (${what})` : `session ${sessionId} not active again (${what})`);
    if (!back) step.violations.push({ invariant: "step", detail: `${what}: the session ${sessionId} did not play again within 20 s` });
    await receiver
      .waitFor(() => lifecycleEvents(step).filter((e) => e.name === "stream.started").length > started, `stream.started after ${what}`, 10_000)
      .catch(() => step.violations.push({ invariant: "step", detail: `no stream.started after ${what}` }));
    return back ? ms : NaN;
  };
  // The same reconnect twice in one run: to the node that holds the session, then to the other.
  const sameNodeMs = await reconnect(b, "reconnect to the same node");
  const otherNodeMs = await reconnect(c, "reconnect to the other node");
  const consistent = await settled(step, s, "after the move");
  console.log(
    `S6: reconnect → playing again: same node ${(sameNodeMs / 1000).toFixed(1)} s, other node ${(otherNodeMs / 1000).toFixed(1)} s; consistent after ${(consistent.ms / 1000).toFixed(1)} s`,
  );
  // The same session went on throughout: one session, one recording.
  const sessions = await db.query<{ id: string; node_id: string }>("SELECT id, node_id FROM sessions WHERE parent_id = $1 ORDER BY seq", [s.id]);
  if (sessions.length !== 1 || sessions[0]!.id !== sessionId) {
    step.violations.push({ invariant: "step", detail: `the move made sessions ${sessions.map((x) => `${x.id}@${x.node_id}`).join(", ")} where the one session ${sessionId} should continue` });
  }
  // Its playlist went on: a discontinuity, media sequence numbers still growing.
  const media = await (await fetch(`${a.base}/hls/${s.playbackId}/0/index.m3u8`)).text();
  if (!media.includes("#EXT-X-DISCONTINUITY")) step.violations.push({ invariant: "step", detail: `no discontinuity in the continued playlist:\n${media}` });
  await publisher.stop();
  expect((await viaA("DELETE", `/stream/${s.id}/terminate`)).status).toBe(204);
  step.mark("publisher stopped; terminated through A");
  await waitFor("S6's session to end", async () => (await openSession(s.id)) === undefined, 15_000, 200).catch(() =>
    step.violations.push({ invariant: "step", detail: `stream ${s.id}: a session still open 15 s after terminate` }),
  );
  await finish(step);
});

async function mp4Seconds(sessionId: string): Promise<number | undefined> {
  const bucket = s3Client({ endpoint: `http://127.0.0.1:${s3Port}`, bucket: BUCKET, region: "us-east-1", accessKeyId: "S3RVER", secretAccessKey: "S3RVER", forcePathStyle: true });
  try {
    const obj = await bucket.send(new GetObjectCommand({ Bucket: BUCKET, Key: `recordings/${sessionId}/output.mp4` }));
    const file = path.join(work, `${sessionId}.mp4`);
    fs.writeFileSync(file, Buffer.from(await obj.Body!.transformToByteArray()));
    const probe = spawnSync(FFPROBE, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", file], { encoding: "utf8" });
    return Number(probe.stdout.trim()) || undefined;
  } catch {
    return undefined;
  }
}

it("I4: every recording of the schedule, once finalized, lasts what its session recorded", async () => {
  const step = new Step("I4 recordings");
  const ids = [...recorded.keys()];
  const rows = await waitFor("recordings finalized", async () => {
    const r = await db.query<{ id: string; recording_status: string | null; source_segments_duration: number }>(
      "SELECT id, recording_status, source_segments_duration FROM sessions WHERE id = ANY($1)",
      [ids],
    );
    return r.every((x) => x.recording_status === "ready" || x.recording_status === "failed") ? r : undefined;
  }, 40_000, 1_000).catch(async () =>
    db.query<{ id: string; recording_status: string | null; source_segments_duration: number }>("SELECT id, recording_status, source_segments_duration FROM sessions WHERE id = ANY($1)", [ids]),
  );
  const checks: RecordingCheck[] = [];
  for (const r of rows) {
    // A recording once ready whose status moved on: its MP4 was handed out, so it must cover the session too.
    const wasReady = r.recording_status !== "ready" && everReady.has(r.id);
    const probed = r.recording_status === "ready" || wasReady ? await mp4Seconds(r.id) : undefined;
    const label = `${r.id} (${recorded.get(r.id)}${wasReady ? `, ready earlier, now ${r.recording_status}` : ""})`;
    checks.push({ sessionId: label, status: wasReady ? "ready" : r.recording_status, recordedSeconds: Number(r.source_segments_duration), mp4Seconds: probed });
    step.mark(`${recorded.get(r.id)} session ${r.id}: recording ${r.recording_status}, recorded ${Number(r.source_segments_duration).toFixed(2)} s, mp4 ${checks.at(-1)!.mp4Seconds ?? "-"}`);
    if (r.recording_status !== "ready" && r.recording_status !== "failed") step.violations.push({ invariant: "I4", detail: `session ${r.id} (${recorded.get(r.id)}): recording still ${r.recording_status} 40 s after the schedule` });
  }
  step.violations.push(...readyRecordingsCover(checks));
  await finish(step);
}, 150_000);
