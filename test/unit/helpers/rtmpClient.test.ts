import net from "node:net";
import type { EventEmitter } from "node:events";
import { audioCodecOf, videoCodecOf } from "../../../src/ingest/mediaCheck";
import { waitFor } from "../../helpers/media";
import {
  Amf0EcmaArray,
  ChunkStreamReader,
  RtmpPublisher,
  RtmpType,
  aacSequenceHeaderTag,
  aacSilentFrameTag,
  avcKeyframeTag,
  avcSequenceHeaderTag,
  decodeAmf0,
  encodeAmf0,
  encodeChunks,
  enhancedSequenceStartTag,
  mp3FrameTag,
  mpeg4Part2KeyframeTag,
  parseRtmpUrl,
  sorensonH263KeyframeTag,
  type RtmpMessage,
} from "../../helpers/rtmpClient";

// The server side is node-media-server 2.7.4 itself, run as src/ingest/rtmpIngest.ts runs it:
// its sessions on a net.Server of our own, its events from its process-wide context.
/* eslint-disable @typescript-eslint/no-require-imports */
const NodeRtmpSession = require("node-media-server/src/node_rtmp_session") as new (config: unknown, socket: net.Socket) => NmsSession;
const nmsContext = require("node-media-server/src/node_core_ctx") as { publishers: Map<string, string>; nodeEvent: EventEmitter };
const nmsLogger = require("node-media-server/src/node_core_logger") as { setLogType(type: number): void };
const nmsAv = require("node-media-server/src/node_core_av") as {
  readAVCSpecificConfig(tag: Buffer): { profile: number; level: number; width: number; height: number };
  readAACSpecificConfig(tag: Buffer): { object_type: number; sample_rate: number; channels: number };
};
/* eslint-enable @typescript-eslint/no-require-imports */

nmsLogger.setLogType(0);

interface NmsPacket {
  header: { fmt: number; cid: number; type: number; stream_id: number; timestamp: number; length: number };
  payload: Buffer;
  clock: number;
}

interface NmsSession {
  id: string;
  socket: net.Socket;
  publishStreamId: number;
  parserPacket: NmsPacket;
  ackSize: number;
  inChunkSize: number;
  videoFps: number;
  videoWidth: number;
  videoHeight: number;
  videoProfileName: string;
  audioCodec: number;
  audioSamplerate: number;
  audioChannels: number;
  metaData: Buffer | null;
  rtmpVideoHandler(): void;
  rtmpAudioHandler(): void;
  rtmpEventHandler(): void;
  rtmpControlHandler(): void;
  rtmpChunksCreate(packet: NmsPacket): Buffer;
  sendStatusMessage(streamId: number, level: string, code: string, description: string): void;
  sendWindowACK(size: number): void;
  sendPingRequest(): void;
  run(): void;
  reject(): void;
  stop(): void;
}

/** What a session of ours read from its client, message by message. */
interface Seen {
  video: { clock: number; payload: Buffer }[];
  audio: { clock: number; payload: Buffer }[];
  userControl: Buffer[];
  acknowledgements: number[];
}

interface TestRtmpServer {
  url(streamName: string): string;
  session(id: string): NmsSession;
  /** The session publishing `/live/<streamName>`. */
  publisherOf(streamName: string): NmsSession;
  seen(id: string): Seen;
  /** Listens to node-media-server's process-wide events until close(). */
  on(event: string, listener: (id: string) => void): void;
  close(): Promise<void>;
}

const NMS_CONFIG = { rtmp: { chunk_size: 60000, gop_cache: true, ping: 30, ping_timeout: 60 } };

async function startRtmpServer(): Promise<TestRtmpServer> {
  const sessions = new Map<string, NmsSession>();
  const seen = new Map<string, Seen>();
  const listeners: [string, (id: string) => void][] = [];
  const server = net.createServer((socket) => {
    const session = new NodeRtmpSession(NMS_CONFIG, socket);
    // 2.7.4 starts a 5 s timer, never unref'd, on a publisher's first video tag to guess its
    // frame rate; a non-zero rate skips it, so jest has nothing to wait for after the tests.
    session.videoFps = 1;
    const record: Seen = { video: [], audio: [], userControl: [], acknowledgements: [] };
    const message = () => Buffer.from(session.parserPacket.payload.subarray(0, session.parserPacket.header.length));
    const { rtmpVideoHandler, rtmpAudioHandler, rtmpControlHandler } = session;
    session.rtmpVideoHandler = () => {
      record.video.push({ clock: session.parserPacket.clock, payload: message() });
      rtmpVideoHandler.call(session);
    };
    session.rtmpAudioHandler = () => {
      record.audio.push({ clock: session.parserPacket.clock, payload: message() });
      rtmpAudioHandler.call(session);
    };
    session.rtmpEventHandler = () => void record.userControl.push(message()); // 2.7.4's own does nothing
    session.rtmpControlHandler = () => {
      if (session.parserPacket.header.type === RtmpType.acknowledgement) record.acknowledgements.push(message().readUInt32BE(0));
      rtmpControlHandler.call(session);
    };
    sessions.set(session.id, session);
    seen.set(session.id, record);
    session.run();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  const session = (id: string) => {
    const s = sessions.get(id);
    if (!s) throw new Error(`no session ${id} on this server`);
    return s;
  };
  return {
    url: (streamName) => `rtmp://127.0.0.1:${port}/live/${streamName}`,
    session,
    publisherOf: (streamName) => session(nmsContext.publishers.get(`/live/${streamName}`) ?? "none"),
    seen: (id) => seen.get(id)!,
    on(event, listener) {
      // Other servers' sessions share the context: only ours are this test's business.
      const ours = (id: string) => void (sessions.has(id) && listener(id));
      nmsContext.nodeEvent.on(event, ours);
      listeners.push([event, ours]);
    },
    async close() {
      for (const [event, listener] of listeners.splice(0)) nmsContext.nodeEvent.off(event, listener);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions.values()) s.stop();
      await closed;
    },
  };
}

/** Delimits messages in tests: what the reader hands back, compared field by field. */
const msg = (csid: number, type: number, streamId: number, timestamp: number, payload: Buffer): RtmpMessage => ({ csid, type, streamId, timestamp, payload });
const bytes = (length: number, seed: number) => Buffer.from(Array.from({ length }, (_, i) => (seed + i) & 0xff));

describe("AMF0", () => {
  it("decodes what it encodes", () => {
    const values = ["connect", 1, { app: "live", nested: { ok: true, none: null }, list: [1, "two"] }, null, undefined, false, "é".repeat(3), new Date(1_700_000_000_000)];
    expect(decodeAmf0(encodeAmf0(values))).toEqual(values);
  });

  it("writes an ECMA array (onMetaData) with its marker and count, and reads it back as an object", () => {
    const encoded = encodeAmf0([new Amf0EcmaArray({ width: 320, stereo: true })]);
    expect(encoded.subarray(0, 5)).toEqual(Buffer.from([0x08, 0, 0, 0, 2]));
    expect(decodeAmf0(encoded)).toEqual([{ width: 320, stereo: true }]);
  });

  it("refuses what it cannot read", () => {
    expect(() => decodeAmf0(Buffer.from([0x02, 0x00, 0x05, 0x61]))).toThrow(/truncated/);
    expect(() => decodeAmf0(Buffer.from([0x11]))).toThrow(/unsupported marker 0x11/);
  });
});

describe("the chunk stream", () => {
  it("reassembles messages of any size, on one- to three-byte chunk stream ids, with extended timestamps", () => {
    const messages = [
      msg(3, RtmpType.amf0Command, 0, 0, bytes(0, 0)),
      msg(4, RtmpType.audio, 1, 1000, bytes(128, 1)),
      msg(5, RtmpType.video, 1, 2000, bytes(1000, 2)),
      msg(70, RtmpType.video, 1, 0xfffffe, bytes(129, 3)),
      msg(400, RtmpType.video, 1, 0xffffffff, bytes(300, 4)),
    ];
    const wire = Buffer.concat(messages.map((m) => encodeChunks(m, 128)));
    expect(new ChunkStreamReader().push(wire)).toEqual(messages);
    // The same bytes a byte at a time: nothing is read before its chunk is whole.
    const reader = new ChunkStreamReader();
    const oneByOne = [...wire].flatMap((b) => reader.push(Buffer.from([b])));
    expect(oneByOne).toEqual(messages);
  });

  it("applies a Set Chunk Size to the chunks right after it", () => {
    const size = Buffer.alloc(4);
    size.writeUInt32BE(256);
    const big = msg(6, RtmpType.video, 1, 5, bytes(600, 9));
    const reader = new ChunkStreamReader();
    const out = reader.push(Buffer.concat([encodeChunks(msg(2, RtmpType.setChunkSize, 0, 0, size), 128), encodeChunks(big, 256)]));
    expect(out.map((m) => m.type)).toEqual([RtmpType.setChunkSize, RtmpType.video]);
    expect(out[1]).toEqual(big);
    expect(reader.incomingChunkSize).toBe(256);
  });

  it("fills in headers of types 1, 2 and 3 from the chunk stream's last one, interleaved with another stream", () => {
    const a = bytes(200, 10);
    const c = bytes(200, 20);
    const d = bytes(200, 30);
    const wire = Buffer.concat([
      // A: type 0 on csid 4, ts 1000, 200 bytes of audio on stream 1: its first 128 bytes
      Buffer.from([0x04, 0x00, 0x03, 0xe8, 0x00, 0x00, 0xc8, 0x08, 0x01, 0x00, 0x00, 0x00]),
      a.subarray(0, 128),
      // B: type 0 on csid 5 (ts 7, 3 bytes of video), between A's chunks
      Buffer.from([0x05, 0x00, 0x00, 0x07, 0x00, 0x00, 0x03, 0x09, 0x01, 0x00, 0x00, 0x00, 0xb0, 0xb1, 0xb2]),
      // the rest of A: a type 3 continuation
      Buffer.from([0xc4]),
      a.subarray(128),
      // C: type 2 on csid 4, delta 20: A's length, type and stream
      Buffer.from([0x84, 0x00, 0x00, 0x14]),
      c.subarray(0, 128),
      Buffer.from([0xc4]),
      c.subarray(128),
      // D: type 3 starting a message: the same delta again
      Buffer.from([0xc4]),
      d.subarray(0, 128),
      Buffer.from([0xc4]),
      d.subarray(128),
      // E: type 1 on csid 4, delta 5, 2 bytes of video
      Buffer.from([0x44, 0x00, 0x00, 0x05, 0x00, 0x00, 0x02, 0x09, 0xe0, 0xe1]),
      // F: type 3 on csid 5 after its type 0: spec 5.3.1.2.4, the delta is that type 0's timestamp
      Buffer.from([0xc5, 0xf0, 0xf1, 0xf2]),
    ]);
    expect(new ChunkStreamReader().push(wire)).toEqual([
      msg(5, RtmpType.video, 1, 7, Buffer.from([0xb0, 0xb1, 0xb2])),
      msg(4, RtmpType.audio, 1, 1000, a),
      msg(4, RtmpType.audio, 1, 1020, c),
      msg(4, RtmpType.audio, 1, 1040, d),
      msg(4, RtmpType.video, 1, 1045, Buffer.from([0xe0, 0xe1])),
      msg(5, RtmpType.video, 1, 14, Buffer.from([0xf0, 0xf1, 0xf2])),
    ]);
  });

  it("carries the extended timestamp field into type 3 chunks after a header that had one", () => {
    const payload = bytes(130, 40);
    const wire = Buffer.concat([
      Buffer.from([0x06, 0xff, 0xff, 0xff, 0x00, 0x00, 0x82, 0x09, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00]),
      payload.subarray(0, 128),
      Buffer.from([0xc6, 0x01, 0x00, 0x00, 0x00]),
      payload.subarray(128),
      // a new message by a type 3 chunk: delta 0x01000000 again, extended field present
      Buffer.from([0xc6, 0x01, 0x00, 0x00, 0x00]),
      payload.subarray(0, 128),
      Buffer.from([0xc6, 0x01, 0x00, 0x00, 0x00]),
      payload.subarray(128),
    ]);
    expect(new ChunkStreamReader().push(wire)).toEqual([msg(6, RtmpType.video, 1, 0x01000000, payload), msg(6, RtmpType.video, 1, 0x02000000, payload)]);
  });

  it("drops a message cut short by an Abort, and refuses chunks with nothing to fill their header from", () => {
    const abort = Buffer.alloc(4);
    abort.writeUInt32BE(4);
    const whole = msg(4, RtmpType.audio, 1, 9, bytes(10, 50));
    const wire = Buffer.concat([encodeChunks(msg(4, RtmpType.audio, 1, 0, bytes(200, 0)), 128).subarray(0, 12 + 128), encodeChunks(msg(2, RtmpType.abort, 0, 0, abort), 128), encodeChunks(whole, 128)]);
    expect(new ChunkStreamReader().push(wire).map((m) => m.type === RtmpType.abort || m)).toEqual([true, whole]);
    expect(() => new ChunkStreamReader().push(Buffer.from([0x47, 0, 0, 0, 0, 0, 1, 9, 0]))).toThrow(/no type 0 chunk/);
  });
});

describe("RTMP URLs", () => {
  it("splits host, port, app and stream name, the name taken as written", () => {
    expect(parseRtmpUrl("rtmp://127.0.0.1:19350/live/abc?x=1")).toEqual({ host: "127.0.0.1", port: 19350, app: "live", streamName: "abc?x=1", tcUrl: "rtmp://127.0.0.1:19350/live" });
    expect(parseRtmpUrl("rtmp://[::1]/live/../k%20ey")).toEqual({ host: "::1", port: 1935, app: "live", streamName: "../k%20ey", tcUrl: "rtmp://[::1]:1935/live" });
    expect(() => parseRtmpUrl("http://host/live/key")).toThrow(/not an rtmp/);
    expect(() => parseRtmpUrl("rtmp://host/live")).toThrow(/not an rtmp/);
  });
});

describe("FLV tag bodies", () => {
  it("carry the codecs onair's media check reads", () => {
    expect([avcSequenceHeaderTag(), avcKeyframeTag(), sorensonH263KeyframeTag(), mpeg4Part2KeyframeTag(), enhancedSequenceStartTag("hvc1")].map(videoCodecOf)).toEqual([
      "H.264",
      "H.264",
      "Sorenson H.263",
      "MPEG-4 Part 2",
      "HEVC",
    ]);
    expect([aacSequenceHeaderTag(), aacSilentFrameTag(), mp3FrameTag()].map(audioCodecOf)).toEqual(["AAC", "AAC", "MP3"]);
    expect([...avcSequenceHeaderTag().subarray(0, 2), ...avcKeyframeTag().subarray(0, 2), sorensonH263KeyframeTag()[0], mp3FrameTag()[0]]).toEqual([0x17, 0x00, 0x17, 0x01, 0x12, 0x2f]);
  });

  it("describe a 320x240 Baseline H.264 stream with 44.1 kHz stereo AAC-LC, as node-media-server reads them", () => {
    expect(nmsAv.readAVCSpecificConfig(avcSequenceHeaderTag())).toMatchObject({ profile: 66, width: 320, height: 240 });
    expect(nmsAv.readAACSpecificConfig(aacSequenceHeaderTag())).toMatchObject({ object_type: 2, sample_rate: 44100, channels: 2 });
  });
});

describe("RtmpPublisher against node-media-server 2.7.4", () => {
  let server: TestRtmpServer;
  const clients: RtmpPublisher[] = [];
  let streamCount = 0;
  /** Stream paths are process-wide in node-media-server: each test publishes its own. */
  const newStreamName = () => `rtmp-client-test-${process.pid}-${++streamCount}`;

  beforeEach(async () => {
    server = await startRtmpServer();
  });

  afterEach(async () => {
    for (const c of clients.splice(0)) {
      c.close();
      await c.closed;
    }
    await server.close();
  });

  async function connect(streamName: string, options: { chunkSize?: number } = {}): Promise<RtmpPublisher> {
    const c = await RtmpPublisher.connect(server.url(streamName), { timeoutMs: 5000, ...options });
    clients.push(c);
    return c;
  }

  it("publishes: NetStream.Publish.Start, then the server reads its metadata, audio and video as sent", async () => {
    const name = newStreamName();
    // 128-byte chunks, so the key frame takes continuation chunks, one of them with an extended timestamp
    const c = await connect(name, { chunkSize: 128 });
    expect(c.streamId).toBe(1);
    const status = await c.publish();
    expect(status).toEqual({ level: "status", code: "NetStream.Publish.Start", description: `/live/${name} is now published.` });

    const session = server.publisherOf(name);
    expect(session.inChunkSize).toBe(128);
    c.sendMetadata({ width: 320, height: 240, framerate: 25, audiosamplerate: 44100, stereo: true });
    const video = [
      { clock: 0, payload: avcSequenceHeaderTag() },
      { clock: 40, payload: avcKeyframeTag() },
      { clock: 0x01000050, payload: avcKeyframeTag() },
    ];
    const audio = [
      { clock: 0, payload: aacSequenceHeaderTag() },
      { clock: 23, payload: aacSilentFrameTag() },
    ];
    for (const v of video) expect(c.sendVideo(v.payload, v.clock)).toBe(true);
    for (const a of audio) expect(c.sendAudio(a.payload, a.clock)).toBe(true);

    const seen = server.seen(session.id);
    await waitFor("the server to read every tag", () => seen.video.length === video.length && seen.audio.length === audio.length, 5000, 5);
    expect(seen.video).toEqual(video);
    expect(seen.audio).toEqual(audio);
    expect(session.metaData).not.toBeNull();
    expect([session.videoWidth, session.videoHeight, session.videoProfileName]).toEqual([320, 240, "Baseline"]);
    expect([session.audioCodec, session.audioSamplerate, session.audioChannels]).toEqual([10, 44100, 2]);
    expect(c.statuses).toEqual([status]);
    expect(c.isOpen).toBe(true);
  });

  it("returns the status a publisher refused in prePublish receives: NetStream.Publish.BadName and its description", async () => {
    server.on("prePublish", (id) => {
      const session = server.session(id);
      session.sendStatusMessage(session.publishStreamId, "error", "NetStream.Publish.BadName", "invalid stream key");
      session.reject();
    });
    const c = await connect(newStreamName());
    expect(await c.publish()).toEqual({ level: "error", code: "NetStream.Publish.BadName", description: "invalid stream key" });
    expect(await c.nextStatus()).toEqual({ closed: true });
    await c.closed;
    expect(c.isOpen).toBe(false);
    expect(c.sendVideo(avcKeyframeTag(), 0)).toBe(false);
  });

  it("returns a refusal sent after NetStream.Publish.Start (for the media) from nextStatus()", async () => {
    server.on("postPublish", (id) => {
      const session = server.session(id);
      session.rtmpVideoHandler = () => {
        session.sendStatusMessage(session.publishStreamId, "error", "NetStream.Publish.Rejected", "video codec MPEG-4 Part 2 is not supported");
        session.reject();
      };
    });
    const c = await connect(newStreamName());
    expect(await c.publish()).toMatchObject({ code: "NetStream.Publish.Start" });
    c.sendVideo(mpeg4Part2KeyframeTag(), 0);
    expect(await c.nextStatus()).toEqual({ level: "error", code: "NetStream.Publish.Rejected", description: "video codec MPEG-4 Part 2 is not supported" });
    expect(await c.nextStatus()).toEqual({ closed: true });
    expect(c.statuses.map((s) => s.code)).toEqual(["NetStream.Publish.Start", "NetStream.Publish.Rejected"]);
  });

  it("returns {closed: true} when the server closes without a status", async () => {
    server.on("prePublish", (id) => server.session(id).reject());
    const c = await connect(newStreamName());
    expect(await c.publish()).toEqual({ closed: true });
    expect(c.statuses).toEqual([]);
    await c.closed;
  });

  it("answers pings with the request's timestamp", async () => {
    const name = newStreamName();
    const c = await connect(name);
    await c.publish();
    const session = server.publisherOf(name);
    const ping: NmsPacket = { header: { fmt: 0, cid: 2, type: RtmpType.userControl, stream_id: 0, timestamp: 0, length: 6 }, payload: Buffer.from([0, 6, 0xde, 0xad, 0xbe, 0xef]), clock: 0 };
    session.socket.write(session.rtmpChunksCreate(ping)); // node-media-server's own chunk writer
    session.sendPingRequest(); // and its own ping, as its interval sends it
    const seen = server.seen(session.id);
    await waitFor("two ping responses", () => seen.userControl.length >= 2, 5000, 5);
    expect(seen.userControl[0]).toEqual(Buffer.from([0, 7, 0xde, 0xad, 0xbe, 0xef]));
    expect(seen.userControl[1]!.readUInt16BE(0)).toBe(7);
  });

  it("acknowledges what it received once the server's window is full, and answers Set Peer Bandwidth", async () => {
    server.on("postConnect", (id) => server.session(id).sendWindowACK(100));
    const name = newStreamName();
    const c = await connect(name);
    await c.publish();
    const session = server.publisherOf(name);
    const seen = server.seen(session.id);
    await waitFor("an acknowledgement", () => seen.acknowledgements.length > 0, 5000, 5);
    expect(seen.acknowledgements[0]).toBeGreaterThanOrEqual(100);
    expect(seen.acknowledgements[0]).toBeLessThanOrEqual(session.socket.bytesWritten);
    // The Window Acknowledgement Size answering the server's Set Peer Bandwidth (5,000,000 in 2.7.4)
    expect(session.ackSize).toBe(5_000_000);
  });

  it("fails connect() with the reason when nothing listens, and after its timeout when nothing answers", async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    await expect(RtmpPublisher.connect(`rtmp://127.0.0.1:${closedPort}/live/x`, { timeoutMs: 5000 })).rejects.toThrow(/closed during the handshake: connect ECONNREFUSED/);

    const sockets = new Set<net.Socket>();
    const silent = net.createServer((s) => sockets.add(s));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as net.AddressInfo;
    try {
      await expect(RtmpPublisher.connect(`rtmp://127.0.0.1:${port}/live/x`, { timeoutMs: 200 })).rejects.toThrow(/no handshake from 127.0.0.1:\d+ within \d+ ms/);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it("closes idempotently", async () => {
    const c = await connect(newStreamName());
    c.close();
    c.close();
    await c.closed;
    expect(await c.nextStatus()).toEqual({ closed: true });
    c.close();
  });
});
