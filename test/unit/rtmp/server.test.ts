import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import { encodeAmf0 } from "../../../src/rtmp/amf0";
import { encodeAudioTag, encodeVideoTag, type VideoTag } from "../../../src/rtmp/enhanced";
import { FlvTagType } from "../../../src/rtmp/flv";
import { RtmpPublisher } from "../../../src/rtmp/publisher";
import { RtmpServer, type PublishDecision, type PublishedMedia, type PublishRequest, type RtmpServerOptions } from "../../../src/rtmp/server";
import type { PublishEndReason } from "../../../src/rtmp/serverCommands";

// onair's RTMP server (src/rtmp/server.ts) on 127.0.0.1 against real publishers: ffmpeg, onair's
// own RtmpPublisher, and sockets that do not speak RTMP at all.

interface Recorded {
  requests: PublishRequest[];
  media: PublishedMedia[];
  ends: PublishEndReason[];
}

const servers: RtmpServer[] = [];
const children: ChildProcess[] = [];
const sockets: net.Socket[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null && child.pid) process.kill(child.pid, "SIGKILL");
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A server whose hook answers `decide` (accepts by default) and records everything. */
async function startServer(o: Partial<RtmpServerOptions> & { refuse?: { code: string; description: string } } = {}): Promise<{ port: number; server: RtmpServer; rec: Recorded }> {
  const rec: Recorded = { requests: [], media: [], ends: [] };
  const server = new RtmpServer({
    timeoutMs: o.timeoutMs ?? 5000,
    onPublish: async (request): Promise<PublishDecision> => {
      rec.requests.push(request);
      if (o.refuse) return { ok: false, ...o.refuse };
      return { ok: true, sink: { media: (m) => void rec.media.push(m), end: (r) => void rec.ends.push(r) } };
    },
  });
  servers.push(server);
  return { port: await server.listen(0, "127.0.0.1"), server, rec };
}

async function until(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs ffmpeg to its end: exit code and stderr. Killed in afterEach if the test ends first. */
function ffmpeg(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn("ffmpeg", ["-hide_banner", "-nostdin", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  children.push(child);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stderr })));
}

const publishArgs = (port: number, key: string) => [
  "-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-re", "-i", "sine", "-t", "3",
  "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30", "-c:a", "aac", "-f", "flv", `rtmp://127.0.0.1:${port}/live/${key}`,
];

const nonDecreasing = (xs: number[]) => xs.every((x, i) => i === 0 || x >= xs[i - 1]!);

it("takes ffmpeg's publish: app and key to the hook, AVC and AAC configs first, keyframes flagged, timestamps in order, onMetaData, then the publisher's own end", async () => {
  const { port, rec } = await startServer();
  const run = await ffmpeg(publishArgs(port, "sk_test_key"));
  expect(run.code).toBe(0);
  await until("the end of the publish", () => rec.ends.length > 0);

  expect(rec.requests.map((r) => [r.app, r.streamName, r.type, r.tcUrl])).toEqual([["live", "sk_test_key", "live", `rtmp://127.0.0.1:${port}/live`]]);
  expect(rec.requests[0]!.remoteAddress).toMatch(/127\.0\.0\.1/);
  const video = rec.media.filter((m) => m.kind === "video");
  const audio = rec.media.filter((m) => m.kind === "audio");
  expect(video[0]!.tag).toMatchObject({ kind: "config", codec: "avc1", legacy: true });
  const frames = video.slice(1).map((m) => m.tag);
  expect(frames.length).toBeGreaterThanOrEqual(60);
  expect(frames.every((t) => t.kind === "frame" || t.kind === "end")).toBe(true);
  const keyframes = frames.filter((t) => t.kind === "frame" && t.keyframe);
  expect(frames[0]).toMatchObject({ kind: "frame", keyframe: true });
  // -g 30 over 3 s: a keyframe a second, not every frame.
  expect(keyframes.length).toBeGreaterThanOrEqual(3);
  expect(keyframes.length).toBeLessThan(frames.length / 5);
  expect(nonDecreasing(video.map((m) => m.timestamp))).toBe(true);
  expect(video.at(-1)!.timestamp).toBeGreaterThan(2500);
  expect(audio[0]!.tag).toMatchObject({ kind: "config", codec: "mp4a" });
  expect(audio.length).toBeGreaterThan(50);
  expect(audio.slice(1).every((m) => m.tag.kind === "frame")).toBe(true);
  expect(nonDecreasing(audio.map((m) => m.timestamp))).toBe(true);
  const meta = rec.media.find((m) => m.kind === "data");
  expect(meta).toMatchObject({ kind: "data", name: "onMetaData" });
  expect(rec.media.indexOf(meta!)).toBeLessThan(rec.media.indexOf(video[0]!));
  // Raw bodies are kept alongside the parsed tags.
  expect(video[0]!.body[0]).toBe(0x17);
  expect(rec.ends).toEqual([{ kind: "unpublished", command: "FCUnpublish" }]);
});

it("refuses a publish the hook refuses: the publisher is told the code and description, then let go", async () => {
  const { port, server, rec } = await startServer({ refuse: { code: "NetStream.Publish.BadName", description: "unknown stream key" } });
  const run = await ffmpeg(publishArgs(port, "sk_wrong"));
  expect(run.code).not.toBe(0);
  // ffmpeg (5.1) prints an error status's description only.
  expect(run.stderr).toContain("Server error: unknown stream key");
  // onair's publisher shows the code too.
  const refused = RtmpPublisher.publish({ address: "127.0.0.1", port, app: "live", streamName: "sk_other", tcUrl: `rtmp://127.0.0.1:${port}/live` });
  await expect(refused).rejects.toMatchObject({ kind: "rejected", status: { code: "NetStream.Publish.BadName", description: "unknown stream key" } });
  expect(rec.requests.map((r) => r.streamName)).toEqual(["sk_wrong", "sk_other"]);
  expect(rec.media).toEqual([]);
  expect(rec.ends).toEqual([]);
  await until("both connections closed", () => server.openConnections === 0);
});

it("refuses a player: ffmpeg reading the stream exits with an error, and no publish is asked for", async () => {
  const { port, rec } = await startServer();
  const run = await ffmpeg(["-i", `rtmp://127.0.0.1:${port}/live/x`, "-f", "null", "-"]);
  expect(run.code).not.toBe(0);
  expect(run.stderr).toMatch(/publishers only/);
  expect(rec.requests).toEqual([]);
});

const hevcConfig: VideoTag = { kind: "config", codec: "hvc1", record: Buffer.from([1, 2, 3, 4, 5]) };
const hevcFrame: VideoTag = { kind: "frame", codec: "hvc1", frameType: 1, keyframe: true, compositionMs: 40, data: Buffer.from([0, 0, 0, 2, 0x26, 0x01]) };

it("takes onair's own RtmpPublisher, Enhanced RTMP (HEVC) and extended timestamps included, and ends once on finish()", async () => {
  const { port, rec } = await startServer();
  const p = await RtmpPublisher.publish({ address: "127.0.0.1", port, app: "live", streamName: "sk_own", tcUrl: `rtmp://127.0.0.1:${port}/live` });
  const big = Buffer.concat([Buffer.from([0x27, 1, 0, 0, 0]), Buffer.alloc(20_000, 9)]); // many 4096-byte chunks
  p.sendTags([
    { type: FlvTagType.script, timestamp: 0, data: encodeAmf0(["onMetaData", { width: 320 }]) },
    { type: FlvTagType.video, timestamp: 0, data: encodeVideoTag(hevcConfig) },
    { type: FlvTagType.audio, timestamp: 0, data: encodeAudioTag({ kind: "config", codec: "Opus", config: Buffer.from("OpusHead") }) },
    { type: FlvTagType.video, timestamp: 33, data: encodeVideoTag(hevcFrame) },
    { type: FlvTagType.video, timestamp: 66, data: big },
    { type: FlvTagType.video, timestamp: 0x1000000 + 99, data: encodeVideoTag(hevcFrame) },
  ]);
  await until("six media messages", () => rec.media.length >= 6);
  await p.finish();
  expect(await p.ended).toBeUndefined();
  await until("the end", () => rec.ends.length > 0);

  expect(rec.requests.map((r) => [r.app, r.streamName, r.caps.capsEx])).toEqual([["live", "sk_own", 0]]);
  expect(rec.media.map((m) => [m.kind, m.timestamp])).toEqual([["data", 0], ["video", 0], ["audio", 0], ["video", 33], ["video", 66], ["video", 0x1000000 + 99]]);
  expect(rec.media[0]).toMatchObject({ name: "onMetaData", values: [{ width: 320 }] });
  expect(rec.media[1]!.kind === "video" && rec.media[1]!.tag).toEqual(hevcConfig);
  expect(rec.media[2]!.kind === "audio" && rec.media[2]!.tag).toMatchObject({ kind: "config", codec: "Opus" });
  expect(rec.media[3]!.kind === "video" && rec.media[3]!.tag).toEqual(hevcFrame);
  expect(rec.media[4]!.body.equals(big)).toBe(true);
  expect(rec.ends).toEqual([{ kind: "unpublished", command: "FCUnpublish" }]);
  // A legacy client announced no reconnect support: none is requested.
  expect(rec.requests[0]!.connection.requestReconnect()).toBe(false);
});

it("drops a client sending garbage and one that says nothing (after the timeout), and keeps serving", async () => {
  const { port, server, rec } = await startServer({ timeoutMs: 300 });
  const closedAfter = (write?: Buffer) =>
    new Promise<number>((resolve) => {
      const started = Date.now();
      const s = net.connect(port, "127.0.0.1", () => write && s.write(write));
      sockets.push(s);
      s.on("error", () => undefined);
      s.resume();
      s.once("close", () => resolve(Date.now() - started));
    });
  const [garbage, silent] = await Promise.all([closedAfter(Buffer.from("GET / HTTP/1.1\r\nHost: x\r\n\r\n")), closedAfter()]);
  expect(garbage).toBeLessThan(250);
  expect(silent).toBeGreaterThanOrEqual(280);
  await until("no connection open", () => server.openConnections === 0);

  const p = await RtmpPublisher.publish({ address: "127.0.0.1", port, app: "live", streamName: "after", tcUrl: `rtmp://127.0.0.1:${port}/live` });
  await p.finish();
  expect(rec.requests.map((r) => r.streamName)).toEqual(["after"]);
});
