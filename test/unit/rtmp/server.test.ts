import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { amf0Text, decodeAmf0, encodeAmf0, type Amf0Value } from "../../../src/rtmp/amf0";
import { ChunkReader, ChunkWriter, controlMessage, RtmpType, UserControl, type RtmpMessage } from "../../../src/rtmp/chunks";
import { CapsEx } from "../../../src/rtmp/enhancedConnect";
import { ClientHandshake, helloPacket } from "../../../src/rtmp/handshake";
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

/** A hand-driven RTMP client: the handshake done, then messages as the test writes them; everything it receives is kept. */
async function rawClient(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  sockets.push(socket);
  socket.on("error", () => undefined);
  const handshake = new ClientHandshake(helloPacket(0, (n) => Buffer.alloc(n, 1)));
  const reader = new ChunkReader();
  const writer = new ChunkWriter();
  const received: RtmpMessage[] = [];
  let handshaken = false;
  let bytesSent = 0;
  const write = (b: Buffer) => {
    bytesSent += b.length;
    socket.write(b);
  };
  socket.on("data", (data: Buffer) => {
    if (!handshaken) {
      const step = handshake.push(data);
      if (step.send) write(step.send);
      if (!step.done) return;
      handshaken = true;
      data = step.rest!;
    }
    received.push(...reader.push(data));
  });
  await new Promise<void>((resolve) => socket.once("connect", resolve));
  write(handshake.start());
  await until("the handshake", () => handshaken);
  const commands = () => received.filter((m) => m.type === RtmpType.amf0Command).map((m) => decodeAmf0(m.payload));
  return {
    socket,
    received,
    commands,
    bytesSent: () => bytesSent,
    send: (...messages: RtmpMessage[]) => write(Buffer.concat(messages.map((m) => writer.write(m)))),
    command: (values: Amf0Value[], streamId = 0): RtmpMessage => ({ csid: 3, type: RtmpType.amf0Command, streamId, timestamp: 0, payload: encodeAmf0(values) }),
  };
}

it("an E-RTMP publisher: asked to reconnect; pings answered; acknowledged at its window; media held while the sink's promise is pending, a malformed tag skipped, then the end after it", async () => {
  const events: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const requests: PublishRequest[] = [];
  const server = new RtmpServer({
    onPublish: async (request) => {
      requests.push(request);
      return { ok: true, sink: { media: (m) => (events.push(`media ${m.timestamp}`), gate), end: (r) => void events.push(`end ${r.kind}`) } };
    },
  });
  servers.push(server);
  const c = await rawClient(await server.listen(0, "127.0.0.1"));
  c.send(c.command(["connect", 1, { app: "live", tcUrl: "rtmp://127.0.0.1/live", capsEx: CapsEx.reconnect, fourCcList: ["hvc1"] }]));
  await until("connect's _result", () => c.commands().some((v) => v[0] === "_result" && v[1] === 1));
  const ping = Buffer.from([0, UserControl.pingRequest, 0, 0, 0x04, 0xd2]);
  c.send(controlMessage(RtmpType.windowAckSize, 1000), { csid: 2, type: RtmpType.userControl, streamId: 0, timestamp: 0, payload: ping }, c.command(["createStream", 2, null]));
  await until("createStream's _result", () => c.commands().some((v) => v[0] === "_result" && v[1] === 2));
  c.send(c.command(["publish", 0, null, "sk_e", "live"], 1));
  await until("Publish.Start", () => c.commands().some((v) => v[0] === "onStatus" && amf0Text(v[3], "code") === "NetStream.Publish.Start"));
  expect(c.received.some((m) => m.type === RtmpType.userControl && m.payload.equals(Buffer.from([0, UserControl.pingResponse, 0, 0, 0x04, 0xd2])))).toBe(true);

  expect(requests[0]!.caps.capsEx).toBe(CapsEx.reconnect);
  expect(requests[0]!.connection.requestReconnect("rtmp://other/live", "restarting")).toBe(true);
  await until("the reconnect request", () => c.commands().some((v) => v[0] === "onStatus" && amf0Text(v[3], "code") === "NetConnection.Connect.ReconnectRequest"));
  expect(c.commands().find((v) => amf0Text(v[3], "code") === "NetConnection.Connect.ReconnectRequest")![3]).toEqual({ level: "status", code: "NetConnection.Connect.ReconnectRequest", description: "restarting", tcUrl: "rtmp://other/live" });

  const frame = (timestamp: number): RtmpMessage => ({ csid: 6, type: RtmpType.video, streamId: 1, timestamp, payload: Buffer.concat([Buffer.from([0x27, 1, 0, 0, 0]), Buffer.alloc(600)]) });
  // A malformed video message between them is dropped; the stream goes on.
  c.send(frame(0), { ...frame(10), payload: Buffer.alloc(0) }, frame(33), frame(66));
  const sent = c.bytesSent();
  // An acknowledgement of every byte sent: the server has read the three frames.
  await until("an acknowledgement of all sent", () => c.received.some((m) => m.type === RtmpType.acknowledgement && m.payload.readUInt32BE(0) >= sent));
  expect(events).toEqual(["media 0"]);
  c.socket.destroy();
  release();
  await until("the end", () => events.some((e) => e.startsWith("end")));
  expect(events).toEqual(["media 0", "media 33", "media 66", "end disconnected"]);
});

it("speaks RTMPS when given a key and certificate", async () => {
  const fixtures = path.join(__dirname, "../../multistream/fixtures");
  const media: PublishedMedia[] = [];
  const server = new RtmpServer({
    tls: { key: fs.readFileSync(path.join(fixtures, "tls-key.pem")), cert: fs.readFileSync(path.join(fixtures, "tls-cert.pem")) },
    onPublish: async () => ({ ok: true, sink: { media: (m) => void media.push(m), end: () => undefined } }),
  });
  servers.push(server);
  const port = await server.listen(0, "127.0.0.1");
  const p = await RtmpPublisher.publish({ address: "127.0.0.1", port, app: "live", streamName: "tls", tcUrl: `rtmps://127.0.0.1:${port}/live`, tls: { servername: undefined, verify: false } });
  p.sendTag({ type: FlvTagType.video, timestamp: 5, data: encodeVideoTag(hevcConfig) });
  await until("the config over TLS", () => media.length === 1);
  expect(media[0]).toMatchObject({ kind: "video", timestamp: 5, tag: hevcConfig });
  await p.finish();
});
