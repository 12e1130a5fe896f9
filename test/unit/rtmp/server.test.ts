import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { amf0Text, decodeAmf0, encodeAmf0, type Amf0Value } from "../../../src/rtmp/amf0";
import { ChunkReader, ChunkWriter, controlMessage, RtmpType, UserControl, type RtmpMessage } from "../../../src/rtmp/chunks";
import { CapsEx } from "../../../src/rtmp/enhancedConnect";
import { ClientHandshake, helloPacket } from "../../../src/rtmp/handshake";
import { encodeAudioTag, encodeVideoTag, type VideoTag } from "../../../src/rtmp/enhanced";
import { FlvTagType } from "../../../src/rtmp/flv";
import { RtmpPublisher } from "../../../src/rtmp/publisher";
import { RtmpServer, type PlayDecision, type PublishDecision, type PublishedMedia, type PublishRequest, type RtmpServerConnection, type RtmpServerOptions } from "../../../src/rtmp/server";
import type { PublishEndReason } from "../../../src/rtmp/serverCommands";

// onair's RTMP server (src/rtmp/server.ts) on 127.0.0.1 against real publishers: ffmpeg, onair's
// own RtmpPublisher, and sockets that do not speak RTMP at all; and against real players: ffmpeg
// reading a stream back, as the transcode pipeline and multistream pushes do.

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

describe("playing: local readers of a published stream", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  interface Reader {
    connection: RtmpServerConnection;
    started: boolean;
    ends: number;
  }
  interface Relayed {
    live: boolean;
    meta?: PublishedMedia;
    videoConfig?: PublishedMedia;
    audioConfig?: PublishedMedia;
    keyframes: number;
    readers: Set<Reader>;
    /** Every reader ever accepted, ended or not. */
    all: Reader[];
  }

  /**
   * A server with a tiny relay in front: each publish's media goes to every reader of the same
   * name. A reader joins at a keyframe, after the metadata and sequence headers it missed; the
   * publish's end ends every reader's play. Plays of a name not being published are refused.
   */
  async function startRelay(o: Partial<RtmpServerOptions> = {}) {
    const streams = new Map<string, Relayed>();
    const stream = (name: string): Relayed => {
      let s = streams.get(name);
      if (!s) streams.set(name, (s = { live: false, keyframes: 0, readers: new Set(), all: [] }));
      return s;
    };
    const forward = (s: Relayed, m: PublishedMedia) => {
      if (m.kind === "data" && m.name === "onMetaData") s.meta = m;
      else if (m.kind === "video" && m.tag.kind === "config") s.videoConfig = m;
      else if (m.kind === "audio" && m.tag.kind === "config") s.audioConfig = m;
      const keyframe = m.kind === "video" && m.tag.kind === "frame" && m.tag.keyframe;
      if (keyframe) s.keyframes++;
      for (const r of s.readers) {
        if (!r.started) {
          if (!keyframe) continue;
          for (const first of [s.meta, s.videoConfig, s.audioConfig]) if (first) r.connection.sendMedia({ kind: first.kind, timestamp: m.timestamp, body: first.body });
          r.started = true;
        }
        r.connection.sendMedia({ kind: m.kind, timestamp: m.timestamp, body: m.body });
      }
    };
    const server = new RtmpServer({
      timeoutMs: 5000,
      ...o,
      onPublish: async (request): Promise<PublishDecision> => {
        const s = stream(request.streamName);
        s.live = true;
        const end = () => {
          s.live = false;
          for (const r of s.readers) r.connection.endPlay();
        };
        return { ok: true, sink: { media: (m) => forward(s, m), end } };
      },
      onPlay: async (request): Promise<PlayDecision> => {
        const s = streams.get(request.streamName);
        if (!s?.live) return { ok: false, code: "NetStream.Play.StreamNotFound", description: `no live stream ${request.streamName}` };
        const r: Reader = { connection: request.connection, started: false, ends: 0 };
        s.readers.add(r);
        s.all.push(r);
        return {
          ok: true,
          reader: {
            end: () => {
              r.ends++;
              s.readers.delete(r);
            },
          },
        };
      },
    });
    servers.push(server);
    return { port: await server.listen(0, "127.0.0.1"), server, stream };
  }

  const publishFor = (port: number, name: string, seconds: number) => [
    "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-re", "-f", "lavfi", "-i", "sine", "-t", String(seconds),
    "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-c:a", "aac", "-f", "flv", `rtmp://127.0.0.1:${port}/live/${name}`,
  ];

  function ffprobeStreams(file: string): Promise<{ codec_type: string; codec_name: string; nb_read_frames?: string }[]> {
    const child = spawn("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=codec_type,codec_name,nb_read_frames", "-of", "json", file], { stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    return new Promise((resolve, reject) => child.once("close", (code) => (code === 0 ? resolve((JSON.parse(out) as { streams: [] }).streams) : reject(new Error(`ffprobe exited ${code}`)))));
  }

  it("ffmpeg reads a stream ffmpeg publishes, from its next keyframe, and exits 0 with its output finished when the publish ends", async () => {
    const { port, stream } = await startRelay();
    const publisher = ffmpeg(publishFor(port, "a", 5));
    await until("a keyframe published", () => stream("a").keyframes >= 1);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rtmp-play-"));
    dirs.push(dir);
    const out = path.join(dir, "out.ts");
    // -xerror: a connection that just drops is an input error (exit 1), so exit 0 shows ffmpeg
    // took Play.Stop for the end of its input.
    const reader = ffmpeg(["-xerror", "-i", `rtmp://127.0.0.1:${port}/live/a`, "-c", "copy", "-f", "mpegts", out]);
    await until("the reader playing", () => stream("a").all.some((r) => r.started));
    const [pub, read] = await Promise.all([publisher, reader]);
    expect(pub.code).toBe(0);
    expect(read.code).toBe(0);
    expect(read.stderr).not.toMatch(/error/i);
    // The metadata the reader joined with made no stream of its own.
    expect(read.stderr).not.toMatch(/Subtitle|Data:/);
    expect(stream("a").all.map((r) => r.ends)).toEqual([1]);

    const streams = await ffprobeStreams(out);
    expect(streams.map((x) => [x.codec_type, x.codec_name]).sort()).toEqual([["audio", "aac"], ["video", "h264"]]);
    expect(Number(streams.find((x) => x.codec_type === "video")!.nb_read_frames)).toBeGreaterThan(25);
  });

  it("refuses a play the hook refuses: ffmpeg exits with an error naming why, and a player sees the code", async () => {
    const { port } = await startRelay();
    const run = await ffmpeg(["-i", `rtmp://127.0.0.1:${port}/live/nothing`, "-f", "null", "-"]);
    expect(run.code).not.toBe(0);
    // ffmpeg (5.1) prints an error status's description only.
    expect(run.stderr).toContain("Server error: no live stream nothing");

    const c = await rawClient(port);
    c.send(c.command(["connect", 1, { app: "live", tcUrl: `rtmp://127.0.0.1:${port}/live` }]), c.command(["createStream", 2, null]), c.command(["play", 3, null, "nothing"], 1));
    await until("the refusal", () => c.commands().some((v) => v[0] === "onStatus"));
    expect(c.commands().find((v) => v[0] === "onStatus")![3]).toEqual({ level: "error", code: "NetStream.Play.StreamNotFound", description: "no live stream nothing" });
    await until("the refused player let go", () => c.socket.destroyed || c.socket.readableEnded);
  });

  it("a reader that leaves early is ended once, gets nothing more, and the publish goes on", async () => {
    const { port, server, stream } = await startRelay();
    const publisher = ffmpeg(publishFor(port, "b", 4));
    await until("a keyframe published", () => stream("b").keyframes >= 1);
    // Reads one second, then hangs up (deleteStream, then the socket closes).
    const early = await ffmpeg(["-i", `rtmp://127.0.0.1:${port}/live/b`, "-t", "1", "-f", "null", "-"]);
    expect(early.code).toBe(0);
    await until("the early reader's end", () => stream("b").all[0]?.ends === 1);
    const [r] = stream("b").all;
    expect(r!.connection.isPlaying).toBe(false);
    expect(r!.connection.sendMedia({ kind: "video", timestamp: 0, body: Buffer.from([0x17, 1]) })).toBe(false);
    expect((await publisher).code).toBe(0);
    await server.close();
    expect(stream("b").all.map((x) => x.ends)).toEqual([1]);
  });

  it("on the socket: Play.Start and the rest, media on its chunk streams (metadata without @setDataFrame, 32-bit timestamps), endPlay's end, the reader told once", async () => {
    const ends: string[] = [];
    let connection: RtmpServerConnection | undefined;
    const server = new RtmpServer({
      timeoutMs: 300,
      onPublish: async () => ({ ok: true, sink: { media: () => undefined, end: () => undefined } }),
      onPlay: async (request) => {
        connection = request.connection;
        expect([request.app, request.streamName, request.tcUrl]).toEqual(["live", "x", "rtmp://127.0.0.1/live"]);
        return { ok: true, reader: { end: () => void ends.push("end") } };
      },
    });
    servers.push(server);
    const port = await server.listen(0, "127.0.0.1");
    const c = await rawClient(port);
    c.send(c.command(["connect", 1, { app: "live", tcUrl: "rtmp://127.0.0.1/live" }]), c.command(["createStream", 2, null]), c.command(["getStreamLength", 3, null, "x"]), c.command(["play", 4, null, "x", -2000], 1));
    await until("Play.Start", () => c.commands().some((v) => amf0Text(v[3], "code") === "NetStream.Play.Start"));
    expect(c.commands().filter((v) => v[0] === "_result" && v[1] === 3)).toEqual([["_result", 3, null, 0]]);
    expect(c.commands().filter((v) => v[0] === "onStatus").map((v) => amf0Text(v[3], "code"))).toEqual(["NetStream.Play.Reset", "NetStream.Play.Start"]);
    expect(c.received.some((m) => m.type === RtmpType.userControl && m.payload.equals(Buffer.from([0, UserControl.streamBegin, 0, 0, 0, 1])))).toBe(true);

    // Three times the idle timeout: a player may wait long for media, and is not dropped for it.
    await new Promise((resolve) => setTimeout(resolve, 900));
    expect(c.socket.destroyed).toBe(false);
    const conn = connection!;
    expect([conn.isPlaying, conn.isPublishing, conn.localPort, conn.remotePort, conn.localAddress]).toEqual([true, false, port, c.socket.localPort, "127.0.0.1"]);
    expect(conn.bytesRead).toBeGreaterThan(1536 * 2);

    const meta = encodeAmf0(["@setDataFrame", "onMetaData", { width: 320 }]);
    expect(conn.sendMedia({ kind: "data", timestamp: 5000, body: meta })).toBe(true);
    expect(conn.sendMedia({ kind: "video", timestamp: 0x100000000 + 40, body: Buffer.from([0x17, 1, 0, 0, 0, 9]) })).toBe(true);
    expect(conn.sendMedia({ kind: "audio", timestamp: 0xfffffff0, body: Buffer.from([0xaf, 1, 7]) })).toBe(true);
    expect(conn.bufferedBytes).toBeGreaterThanOrEqual(0);
    await until("the three messages", () => c.received.filter((m) => m.streamId === 1 && m.type !== RtmpType.amf0Command).length >= 4);
    const media = c.received.filter((m) => m.streamId === 1 && m.type !== RtmpType.amf0Command);
    expect(media.map((m) => [m.type, m.csid, m.timestamp])).toEqual([[18, 5, 0], [18, 5, 0], [9, 6, 40], [8, 4, 0xfffffff0]]);
    expect(decodeAmf0(media[0]!.payload)).toEqual(["|RtmpSampleAccess", true, true]);
    expect(decodeAmf0(media[1]!.payload)).toEqual(["onMetaData", { width: 320 }]);

    conn.endPlay();
    conn.endPlay();
    await until("the socket closed", () => c.socket.readableEnded || c.socket.destroyed);
    expect(c.commands().filter((v) => v[0] === "onStatus").map((v) => amf0Text(v[3], "code")).slice(2)).toEqual(["NetStream.Play.UnpublishNotify", "NetStream.Play.Stop"]);
    expect(c.received.some((m) => m.type === RtmpType.userControl && m.payload.equals(Buffer.from([0, UserControl.streamEof, 0, 0, 0, 1])))).toBe(true);
    expect(conn.sendMedia({ kind: "audio", timestamp: 1, body: Buffer.from([0xaf, 1]) })).toBe(false);
    expect([conn.isPlaying, ends]).toEqual([false, ["end"]]);
    await server.close();
    expect(ends).toEqual(["end"]);
  });

  it("a play hook that throws refuses the play with NetStream.Play.Failed, and the server goes on", async () => {
    const server = new RtmpServer({
      onPublish: async () => ({ ok: false, code: "NetStream.Publish.Denied", description: "no" }),
      onPlay: async () => {
        throw new Error("the catalogue is down");
      },
    });
    servers.push(server);
    const port = await server.listen(0, "127.0.0.1");
    const c = await rawClient(port);
    c.send(c.command(["connect", 1, { app: "live" }]), c.command(["createStream", 2, null]), c.command(["play", 3, null, "x"], 1));
    await until("the refusal", () => c.commands().some((v) => v[0] === "onStatus"));
    expect(c.commands().find((v) => v[0] === "onStatus")![3]).toEqual({ level: "error", code: "NetStream.Play.Failed", description: "the server could not play the stream" });
    await until("no connection open", () => server.openConnections === 0);
  });

  it("a publisher's connection sends no media, and server close() ends a reader's play once", async () => {
    const ends: string[] = [];
    let publisher: RtmpServerConnection | undefined;
    const server = new RtmpServer({
      onPublish: async (request) => ((publisher = request.connection), { ok: true, sink: { media: () => undefined, end: () => undefined } }),
      onPlay: async () => ({ ok: true, reader: { end: () => void ends.push("end") } }),
    });
    servers.push(server);
    const port = await server.listen(0, "127.0.0.1");
    const p = await RtmpPublisher.publish({ address: "127.0.0.1", port, app: "live", streamName: "p", tcUrl: `rtmp://127.0.0.1:${port}/live` });
    expect([publisher!.isPublishing, publisher!.isPlaying]).toEqual([true, false]);
    expect(publisher!.sendMedia({ kind: "video", timestamp: 0, body: Buffer.from([0x17, 1]) })).toBe(false);
    const c = await rawClient(port);
    c.send(c.command(["connect", 1, { app: "live" }]), c.command(["createStream", 2, null]), c.command(["play", 3, null, "p"], 1));
    await until("Play.Start", () => c.commands().some((v) => amf0Text(v[3], "code") === "NetStream.Play.Start"));
    await server.close();
    expect(ends).toEqual(["end"]);
  });
});
