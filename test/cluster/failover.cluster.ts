import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { GetObjectCommand, HeadObjectCommand } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { hashApiKey } from "../../src/db";
import { s3Client } from "../../src/storage";
import { FFPROBE, ffmpegPidsMentioning, pushTestStream, waitFor } from "../helpers/media";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { tempDir } from "../helpers/server";
import { deleteKeys, uniquePrefix } from "../queue/redis";
import { client, clusterEnv, rtmpBalancer, reconnectingPublisher, startNode, type Node } from "../helpers/clusterNodes";
import { throwAwayDatabase, type ThrowAwayDatabase } from "../helpers/postgres";
import { whepPlay } from "../helpers/whepClient";

// Three onair processes on one PostgreSQL database, Redis and bucket (issue 16):
//   A: api + worker      B, C: api + ingest      an L4 balancer in front of B and C for RTMP.
// A stream published through the balancer lands on B; suspends sent to A reach B; B's whole
// process group is killed mid-stream and the encoder's reconnect lands on C.

const BUCKET = "onair-cluster";
const LEASE_SECONDS = 3;

let work: string;
let db: ThrowAwayDatabase;
let s3: S3rver;
let s3Port: number;
let receiver: Receiver;
let prefix: string;
const nodes: Node[] = [];
const stops: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  work = tempDir("onair-cluster-");
  db = await throwAwayDatabase("cluster");
  s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: path.join(work, "s3"), configureBuckets: [{ name: BUCKET, configs: [] }] });
  s3Port = (await s3.run()).port;
  receiver = await startReceiver(() => 200);
  prefix = uniquePrefix("cluster");
}, 60_000);

afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  // Stopped as a supervisor does (SIGTERM, then SIGKILL to the group after 10 s).
  await Promise.all(nodes.map((n) => n.stop()));
  for (const n of nodes) n.killGroup();
  await receiver?.close();
  await s3?.close();
  await deleteKeys(prefix);
  await db?.drop();
  // Nothing of the cluster runs any more: no onair process, no ffmpeg working in its folders.
  for (const n of nodes) expect(() => process.kill(n.pid, 0)).toThrow();
  expect(ffmpegPidsMentioning(work)).toEqual([]);
  fs.rmSync(work, { recursive: true, force: true });
}, 60_000);

function env(roles: string): Record<string, string> {
  return clusterEnv(
    { roles, databaseUrl: db.url, redisPrefix: prefix, s3Port, bucket: BUCKET, leaseSeconds: LEASE_SECONDS },
    // One bucket per key across the API nodes: 1 token a second after a burst of 100.
    // WebRTC peers on loopback, where the test's WHEP viewer is.
    { CONTROL_POLL_SECONDS: "5", API_RATE_LIMIT: "1", API_RATE_BURST: "100", WEBRTC_BIND_ADDRESS: "127.0.0.1" },
  );
}

const openSessions = async (streamId: string) =>
  (await db.query<{ n: string }>("SELECT COUNT(*) AS n FROM sessions WHERE parent_id = $1 AND ended_at IS NULL", [streamId]))[0]!.n;
const liveSession = async (streamId: string) =>
  (await db.query<{ id: string; node_id: string }>("SELECT id, node_id FROM sessions WHERE parent_id = $1 AND ended_at IS NULL", [streamId]))[0];
const isActive = async (streamId: string) => (await db.query<{ is_active: number }>("SELECT is_active FROM streams WHERE id = $1", [streamId]))[0]?.is_active === 1;
const recordedSeconds = async (streamId: string) => Number((await db.query<{ d: number }>("SELECT source_segments_duration AS d FROM streams WHERE id = $1", [streamId]))[0]?.d ?? 0);
const eventsOf = (sessionId: string, name: string) => receiver.received.filter((r) => r.body?.event === name && r.body?.payload?.sessionId === sessionId);

it("runs a stream on one node, controls it from another, and survives that node's death", async () => {
  const a = await startNode("A", path.join(work, "A"), env("api,worker"));
  nodes.push(a);
  const key = a.key!;
  expect(key).toBeDefined();
  const [b, c] = await Promise.all([startNode("B", path.join(work, "B"), env("api,ingest")), startNode("C", path.join(work, "C"), env("api,ingest"))]);
  nodes.push(b, c);
  const viaA = client(a.apiUrl, key);
  const viaC = client(c.apiUrl, key);

  // B while it is alive, then C: a health-checked L4 balancer.
  const balancer = await rtmpBalancer(() => [b.rtmpPort, c.rtmpPort]);
  stops.push(() => balancer.close());
  const rtmp = (streamKey: string) => `rtmp://127.0.0.1:${balancer.port}/live/${streamKey}`;

  expect((await viaA("POST", "/webhook", { name: "all", url: receiver.url })).status).toBe(200);

  // --- placement and cross-node reads ---
  const s1 = (await viaA("POST", "/stream", { name: "main", record: true, dvrWindow: 60 })).body;
  const encoder = reconnectingPublisher(rtmp(s1.streamKey), 1000);
  stops.push(() => encoder.stop());
  // Polled in the database (the API's rate limit is the test's too); then read through A.
  await waitFor("stream 1 active", () => isActive(s1.id), 15_000, 200);
  expect((await viaA("GET", `/stream/${s1.id}`)).body.isActive).toBe(true);
  const session1 = (await liveSession(s1.id))!;
  expect(session1.node_id).toBe("B");
  for (const [name, base] of [["A", a.base], ["C", c.base]] as const) {
    const master = await fetch(`${base}/hls/${s1.playbackId}/index.m3u8`);
    expect([name, master.status]).toEqual([name, 200]);
    expect(await master.text()).toContain("#EXT-X-STREAM-INF");
    const media = await waitFor(`two segments through ${name}`, async () => {
      const text = await (await fetch(`${base}/hls/${s1.playbackId}/0/index.m3u8`)).text();
      return (text.match(/#EXTINF/g) ?? []).length >= 2 ? text : undefined;
    }, 15_000, 250);
    expect(media).toMatch(/#EXT-X-PART/);
  }
  // The DVR storyboard is kept by B, and reached through A as the HLS is.
  const vtt = await waitFor("a storyboard through A", async () => {
    const res = await fetch(`${a.base}/hls/${s1.playbackId}/storyboard.vtt`);
    return res.status === 200 ? res.text() : undefined;
  }, 20_000, 500);
  const sprite = /^(storyboard\.jpg\?[^#\n]+)#xywh=/m.exec(vtt)![1]!;
  const spriteRes = await fetch(`${a.base}/hls/${s1.playbackId}/${sprite}`);
  expect([spriteRes.status, spriteRes.headers.get("content-type")]).toEqual([200, "image/jpeg"]);
  expect((await fetch(`${c.base}/hls/${s1.playbackId}/storyboard.vtt`)).status).toBe(200);

  // WHEP through A and C is passed to B, which packages the stream: the answer is B's peer, so
  // the media comes from B; the resource (GET, DELETE) is reached through the node that gave it.
  for (const [name, base] of [["A", a.base], ["C", c.base]] as const) {
    const viewer = await whepPlay(`${base}/whep/${s1.playbackId}`);
    expect([name, viewer.status]).toEqual([name, 201]);
    expect(viewer.resource!.startsWith(`${base}/whep/${s1.playbackId}/`)).toBe(true);
    await waitFor(`a WebRTC keyframe through ${name}`, () => viewer.firstFrameMs !== undefined, 15_000);
    expect((await viewer.state()).framesSent).toBeGreaterThan(0);
    expect(await viewer.stop()).toBe(200);
    expect((await fetch(viewer.resource!)).status).toBe(404);
  }

  // --- the control path: a suspend sent to A stops B's publisher ---
  const s2 = (await viaA("POST", "/stream", { name: "suspended on A" })).body;
  const push2 = pushTestStream(rtmp(s2.streamKey), { seconds: 60, fps: 15 });
  await waitFor("stream 2 live on B", async () => (await liveSession(s2.id))?.node_id === "B", 15_000, 200);
  await waitFor("stream 2 active", () => isActive(s2.id), 15_000, 200);
  let t = Date.now();
  expect((await viaA("PATCH", `/stream/${s2.id}`, { suspended: true })).status).toBe(204);
  await push2.exited;
  expect(Date.now() - t).toBeLessThan(2_000);

  // --- again with B's notification connection cut: its poll catches the suspend ---
  const s3 = (await viaA("POST", "/stream", { name: "suspended while B is deaf" })).body;
  const push3 = pushTestStream(rtmp(s3.streamKey), { seconds: 60, fps: 15 });
  await waitFor("stream 3 live on B", async () => (await liveSession(s3.id))?.node_id === "B", 15_000, 200);
  const cut = await db.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'onair-notices B' AND datname = current_database()");
  expect(cut).toHaveLength(1);
  t = Date.now();
  expect((await viaA("PATCH", `/stream/${s3.id}`, { suspended: true })).status).toBe(204);
  await push3.exited;
  expect(Date.now() - t).toBeLessThan(7_000);

  // --- B dies mid-stream ---
  await waitFor("stream 1 recorded for a while", async () => (await recordedSeconds(s1.id)) >= 6, 20_000, 250);
  const heldBeforeDeath = await db.query<{ id: string }>("SELECT id FROM events WHERE stream_id = $1", [s1.id]);
  let twoOpen = 0;
  const sampler = setInterval(() => {
    void openSessions(s1.id).then((n) => Number(n) > 1 && twoOpen++);
  }, 200);
  stops.push(() => clearInterval(sampler));
  const t0 = Date.now();
  b.killGroup();
  await b.exited;
  const session2 = await waitFor("a session of stream 1 on C", async () => {
    const s = await liveSession(s1.id);
    return s?.node_id === "C" ? s : undefined;
  }, 15_000, 100).catch((err: unknown) => {
    // What C saw: its log says why it did not take the stream.
    throw new Error(`${(err as Error).message}\n--- C's log ---\n${c.log().slice(-6000)}`);
  });
  await waitFor("stream 1 active again", () => isActive(s1.id), 15_000, 100);
  const backAfter = Date.now() - t0;
  expect(backAfter).toBeLessThan(10_000);
  expect((await viaA("GET", `/stream/${s1.id}`)).body.isActive).toBe(true);
  // Plays through A again, from C, at the same playback URL.
  await waitFor("stream 1 playing through A from C", async () => {
    const text = await (await fetch(`${a.base}/hls/${s1.playbackId}/0/index.m3u8`)).text();
    return text.includes("#EXTINF") && !text.includes("#EXT-X-ENDLIST");
  }, 15_000, 250);

  // Session 1 ended once, by whichever node got there first, with one stream.idle.
  const [ended] = await db.query<{ ended_at: string | null; end_reason: string }>("SELECT ended_at, end_reason FROM sessions WHERE id = $1", [session1.id]);
  expect(ended!.ended_at).not.toBeNull();
  expect(ended!.end_reason).toMatch(/node B stopped answering/);
  await receiver.waitFor(() => eventsOf(session1.id, "stream.idle").length >= 1, "stream.idle of session 1", 15_000);
  await receiver.waitFor(() => eventsOf(session2.id, "stream.started").length >= 1, "stream.started of session 2", 15_000);

  // Its recording, finalized by A from the bucket into an MP4 there, as long as what was recorded.
  const recorded = await waitFor("session 1's recording ready", async () => {
    const [r] = await db.query<{ recording_status: string; source_segments_duration: number }>("SELECT recording_status, source_segments_duration FROM sessions WHERE id = $1", [session1.id]);
    return r?.recording_status === "ready" ? r : r?.recording_status === "failed" ? Promise.reject(new Error("recording failed")) : undefined;
  }, 90_000, 500);
  const bucket = s3Client({ endpoint: `http://127.0.0.1:${s3Port}`, bucket: BUCKET, region: "us-east-1", accessKeyId: "S3RVER", secretAccessKey: "S3RVER", forcePathStyle: true });
  const mp4Key = `recordings/${session1.id}/output.mp4`;
  expect((await bucket.send(new HeadObjectCommand({ Bucket: BUCKET, Key: mp4Key }))).ContentLength).toBeGreaterThan(10_000);
  const mp4 = path.join(work, "session1.mp4");
  fs.writeFileSync(mp4, Buffer.from(await (await bucket.send(new GetObjectCommand({ Bucket: BUCKET, Key: mp4Key }))).Body!.transformToByteArray()));
  const probe = spawnSync(FFPROBE, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", mp4], { encoding: "utf8" });
  expect(Math.abs(Number(probe.stdout.trim()) - Number(recorded.source_segments_duration))).toBeLessThan(1.5);
  // And served by any API node from the bucket, signed as the API hands it out.
  const rec = (await viaC("GET", `/session/${session1.id}`)).body;
  expect((await fetch(rec.mp4Url.replace(/^https?:\/\/[^/]+/, c.base), { headers: { range: "bytes=0-99" } })).status).toBe(206);

  // Every event raised about stream 1 before B died was delivered (A's workers, from the outbox B wrote).
  for (const e of heldBeforeDeath) {
    await receiver.waitFor((r) => r.some((x) => x.body?.id === e.id), `delivery of event ${e.id}`, 15_000);
  }
  // The janitor runs on A and C every second: still exactly one stream.idle for session 1.
  await new Promise((r) => setTimeout(r, 3 * 1000));
  expect(eventsOf(session1.id, "stream.idle")).toHaveLength(1);
  expect(twoOpen).toBe(0);

  // What the operator would want to know, printed (measured, not asserted).
  const metrics = await (await fetch(`${c.adminUrl}/metrics`)).text();
  const uploadSum = Number(/onair_recording_upload_seconds_sum (\S+)/.exec(metrics)?.[1] ?? NaN);
  const uploadCount = Number(/onair_recording_upload_seconds_count (\S+)/.exec(metrics)?.[1] ?? NaN);
  console.log(
    `cluster timings: node death → stream active again on C ${(backAfter / 1000).toFixed(2)} s; ` +
      `recording upload to the bucket on C: ${uploadCount} files, mean ${((uploadSum / uploadCount) * 1000).toFixed(1)} ms`,
  );

  // --- one rate-limit bucket per key across A and C ---
  const user = (await db.query<{ id: string }>("SELECT id FROM users WHERE name = 'admin'"))[0]!.id;
  const rateKey = `onair_ratetest_${process.pid}_0123456789abcdef`;
  await db.query("INSERT INTO api_keys (id, user_id, key_hash, created_at) VALUES ($1, $2, $3, $4)", [`rate-${process.pid}`, user, hashApiKey(rateKey), Date.now()]);
  const statuses: number[] = [];
  const rateA = client(a.apiUrl, rateKey);
  const rateC = client(c.apiUrl, rateKey);
  for (let i = 0; i < 105; i += 15) {
    const batch = Array.from({ length: Math.min(15, 105 - i) }, (_, k) => ((i + k) % 2 === 0 ? rateA : rateC)("GET", "/stream?limit=1"));
    for (const r of await Promise.all(batch)) statuses.push(r.status);
  }
  expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(100);
  expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(101);
  expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(4);
});
