import crypto from "node:crypto";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { audioForPipeline, videoForPipeline } from "../../../src/ingest/flvForm";
import * as onair from "../../../src/rtmp";
import { FFPROBE, runProcess, waitFor } from "../../helpers/media";
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

// The client is checked against peers that share none of its code: onair's own RTMP server
// (src/rtmp/server.ts) for publishing as an encoder does, a scripted server built from
// src/rtmp's codecs for what that server never sends (pings, Set Peer Bandwidth twice, a
// small acknowledgement window, an error status after NetStream.Publish.Start), and ffprobe
// for what its FLV tag bodies describe.

/** One connection to the scripted server: what its client sent, and a way to send it anything. */
interface ScriptedSession {
  socket: net.Socket;
  /** Every message the client sent after the handshake, in arrival order. */
  received: onair.RtmpMessage[];
  /** What the server could not read, if anything (the connection is then dropped). */
  error?: Error;
  send(message: onair.RtmpMessage): void;
  /** An onStatus on the message stream createStream gave. */
  sendStatus(level: string, code: string, description: string): void;
}

interface Script {
  /** Before connect's _result, where servers announce their window and bandwidth. */
  onConnect?(session: ScriptedSession): void;
  /** Right after NetStream.Publish.Start. */
  onPublishStart?(session: ScriptedSession): void;
  /** Each audio, video or data message after the publish. */
  onMedia?(session: ScriptedSession, message: onair.RtmpMessage): void;
}

interface ScriptedServer {
  url(streamName: string): string;
  sessions: ScriptedSession[];
  close(): Promise<void>;
}

/** The message stream id the scripted server's createStream gives. */
const SCRIPTED_STREAM_ID = 1;

const commandMessage = (values: onair.Amf0Value[], streamId = 0): onair.RtmpMessage => ({ csid: 3, type: onair.RtmpType.amf0Command, streamId, timestamp: 0, payload: onair.encodeAmf0(values) });

function userControlMessage(event: number, value: number, timestamp = 0): onair.RtmpMessage {
  const payload = Buffer.alloc(6);
  payload.writeUInt16BE(event, 0);
  payload.writeUInt32BE(value, 2);
  return { csid: 2, type: onair.RtmpType.userControl, streamId: 0, timestamp, payload };
}

function setPeerBandwidthMessage(size: number): onair.RtmpMessage {
  const payload = Buffer.from([0, 0, 0, 0, 2]); // limit type 2, dynamic (spec 5.4.5)
  payload.writeUInt32BE(size, 0);
  return { csid: 2, type: onair.RtmpType.setPeerBandwidth, streamId: 0, timestamp: 0, payload };
}

/**
 * A server that does just enough to take a publisher (the handshake, connect, createStream,
 * publish answered with NetStream.Publish.Start) and otherwise sends what the test's script
 * says, when it says.
 */
async function startScriptedServer(script: Script): Promise<ScriptedServer> {
  const sessions: ScriptedSession[] = [];
  const server = net.createServer((socket) => {
    const handshake = new onair.ServerHandshake(onair.helloPacket(0, (n) => crypto.randomBytes(n)));
    let handshakeDone = false;
    const reader = new onair.ChunkReader();
    const writer = new onair.ChunkWriter();
    let publishing = false;
    const session: ScriptedSession = {
      socket,
      received: [],
      send: (message) => void (socket.writable && socket.write(writer.write(message))),
      sendStatus: (level, code, description) => session.send(commandMessage(["onStatus", 0, null, { level, code, description }], SCRIPTED_STREAM_ID)),
    };
    sessions.push(session);
    const onMessage = (message: onair.RtmpMessage) => {
      if (message.type === onair.RtmpType.amf0Command) {
        const [name, transaction] = onair.decodeAmf0(message.payload);
        if (name === "connect") {
          script.onConnect?.(session);
          session.send(commandMessage(["_result", transaction, { fmsVer: "FMS/3,0,1,123", capabilities: 31 }, { level: "status", code: "NetConnection.Connect.Success", description: "Connection succeeded." }]));
        } else if (name === "createStream") {
          session.send(commandMessage(["_result", transaction, null, SCRIPTED_STREAM_ID]));
        } else if (name === "publish") {
          publishing = true;
          session.sendStatus("status", "NetStream.Publish.Start", "published");
          script.onPublishStart?.(session);
        }
      } else if (publishing && [onair.RtmpType.audio, onair.RtmpType.video, onair.RtmpType.amf0Data].includes(message.type as 8 | 9 | 18)) {
        script.onMedia?.(session, message);
      }
    };
    socket.on("error", () => {}); // a client that resets fails its own side of the test
    socket.on("data", (data: Buffer) => {
      try {
        if (!handshakeDone) {
          const step = handshake.push(data);
          if (step.send) socket.write(step.send);
          if (!step.done) return;
          handshakeDone = true;
          data = step.rest!;
        }
        for (const message of reader.push(data)) {
          session.received.push(message);
          onMessage(message);
        }
      } catch (err) {
        session.error = err as Error;
        socket.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: (streamName) => `rtmp://127.0.0.1:${port}/live/${streamName}`,
    sessions,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.socket.destroy();
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
    expect([avcSequenceHeaderTag(), avcKeyframeTag(), sorensonH263KeyframeTag(), mpeg4Part2KeyframeTag(), enhancedSequenceStartTag("hvc1")].map((b) => videoForPipeline(onair.readVideoTag(b), b).codec)).toEqual([
      "H.264",
      "H.264",
      "Sorenson H.263",
      "MPEG-4 Part 2",
      "HEVC",
    ]);
    expect([aacSequenceHeaderTag(), aacSilentFrameTag(), mp3FrameTag()].map((b) => audioForPipeline(onair.readAudioTag(b), b).codec)).toEqual(["AAC", "AAC", "MP3"]);
    expect([...avcSequenceHeaderTag().subarray(0, 2), ...avcKeyframeTag().subarray(0, 2), sorensonH263KeyframeTag()[0], mp3FrameTag()[0]]).toEqual([0x17, 0x00, 0x17, 0x01, 0x12, 0x2f]);
  });

  it("describe a 320x240 Baseline H.264 stream with 44.1 kHz stereo AAC-LC that ffprobe decodes from an FLV file", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "rtmp-client-tags-"));
    try {
      const file = path.join(dir, "tags.flv");
      const { audio, video } = onair.FlvTagType;
      const tags = [
        { type: video, timestamp: 0, data: avcSequenceHeaderTag() },
        { type: audio, timestamp: 0, data: aacSequenceHeaderTag() },
        { type: video, timestamp: 0, data: avcKeyframeTag() },
        { type: audio, timestamp: 0, data: aacSilentFrameTag() },
        { type: audio, timestamp: 23, data: aacSilentFrameTag() },
      ];
      await fs.writeFile(file, Buffer.concat([onair.flvHeader({ audio: true, video: true }), ...tags.map(onair.encodeFlvTag)]));
      // -count_frames decodes every frame: the key frame must be a picture, the AAC frames audio.
      const entries = "stream=codec_type,codec_name,profile,width,height,sample_rate,channels,nb_read_frames";
      const { out, err, code } = await runProcess(FFPROBE, ["-v", "error", "-count_frames", "-show_entries", entries, "-of", "json", file]);
      expect({ code, err }).toEqual({ code: 0, err: "" });
      const streams = (JSON.parse(out) as { streams: { codec_type: string }[] }).streams.sort((a, b) => a.codec_type.localeCompare(b.codec_type));
      expect(streams).toEqual([
        { codec_type: "audio", codec_name: "aac", profile: "LC", sample_rate: "44100", channels: 2, nb_read_frames: "2" },
        { codec_type: "video", codec_name: "h264", profile: "Constrained Baseline", width: 320, height: 240, nb_read_frames: "1" },
      ]);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

/** What onair's server was asked, and the media and end a publish it accepted received. */
interface Publish {
  request: onair.PublishRequest;
  media: onair.PublishedMedia[];
  end?: onair.PublishEndReason;
}

describe("RtmpPublisher against onair's RTMP server", () => {
  let server: onair.RtmpServer;
  let port: number;
  let publishes: Publish[];
  /** What the server decides on a publish; accepts, recording its media, unless a test says otherwise. */
  let decide: (publish: Publish) => onair.PublishDecision;
  const clients: RtmpPublisher[] = [];

  beforeEach(async () => {
    publishes = [];
    decide = (publish) => ({ ok: true, sink: { media: (m) => void publish.media.push(m), end: (reason) => void (publish.end = reason) } });
    server = new onair.RtmpServer({
      onPublish: async (request) => {
        const publish: Publish = { request, media: [] };
        publishes.push(publish);
        return decide(publish);
      },
    });
    port = await server.listen(0, "127.0.0.1");
  });

  afterEach(async () => {
    for (const c of clients.splice(0)) {
      c.close();
      await c.closed;
    }
    await server.close();
  });

  async function connect(streamName: string, options: { chunkSize?: number } = {}): Promise<RtmpPublisher> {
    const c = await RtmpPublisher.connect(`rtmp://127.0.0.1:${port}/live/${streamName}`, { timeoutMs: 5000, ...options });
    clients.push(c);
    return c;
  }

  it("publishes: NetStream.Publish.Start, then the server reads its metadata, audio and video as sent", async () => {
    // 100-byte chunks: the server reads the tags right only if the client announced them, and
    // the key frames take continuation chunks, one of them with an extended timestamp.
    const c = await connect("key?token=1", { chunkSize: 100 });
    expect(c.streamId).toBe(1);
    const status = await c.publish();
    expect(status).toEqual({ level: "status", code: "NetStream.Publish.Start", description: "key?token=1 is now published." });
    expect(publishes.map((p) => [p.request.app, p.request.streamName, p.request.type, p.request.tcUrl])).toEqual([["live", "key?token=1", "live", `rtmp://127.0.0.1:${port}/live`]]);

    const metadata = { width: 320, height: 240, framerate: 25, audiosamplerate: 44100, stereo: true };
    expect(c.sendMetadata(metadata)).toBe(true);
    const video = [
      { timestamp: 0, body: avcSequenceHeaderTag() },
      { timestamp: 40, body: avcKeyframeTag() },
      { timestamp: 0x01000050, body: avcKeyframeTag() },
    ];
    const audio = [
      { timestamp: 0, body: aacSequenceHeaderTag() },
      { timestamp: 23, body: aacSilentFrameTag() },
    ];
    for (const v of video) expect(c.sendVideo(v.body, v.timestamp)).toBe(true);
    for (const a of audio) expect(c.sendAudio(a.body, a.timestamp)).toBe(true);

    const { media } = publishes[0]!;
    const total = 1 + video.length + audio.length;
    await waitFor("the server to read every message", () => media.length === total, 5000, 5);
    const of = (kind: string) => media.filter((m) => m.kind === kind);
    expect(of("data")).toEqual([{ kind: "data", timestamp: 0, name: "onMetaData", values: [new onair.Amf0EcmaArray(metadata)], body: encodeAmf0(["@setDataFrame", "onMetaData", new Amf0EcmaArray(metadata)]) }]);
    expect(of("video").map((m) => ({ timestamp: m.timestamp, body: m.body }))).toEqual(video);
    expect(of("audio").map((m) => ({ timestamp: m.timestamp, body: m.body }))).toEqual(audio);
    // And read as what they are: the H.264 configuration, then key frames; the AAC configuration, then a frame.
    expect(of("video").map((m) => m.kind === "video" && m.tag)).toMatchObject([
      { kind: "config", codec: "avc1" },
      { kind: "frame", codec: "avc1", keyframe: true },
      { kind: "frame", codec: "avc1", keyframe: true },
    ]);
    expect(of("audio").map((m) => m.kind === "audio" && m.tag)).toMatchObject([
      { kind: "config", codec: "mp4a", config: Buffer.from([0x12, 0x10]) },
      { kind: "frame", codec: "mp4a" },
    ]);
    expect(c.statuses).toEqual([status]);
    expect(c.isOpen).toBe(true);
    expect(publishes[0]!.end).toBeUndefined();
  });

  it("returns the status of a refused publish: NetStream.Publish.BadName and its description, then the server's close", async () => {
    decide = () => ({ ok: false, code: "NetStream.Publish.BadName", description: "invalid stream key" });
    const c = await connect("wrong-key");
    expect(await c.publish()).toEqual({ level: "error", code: "NetStream.Publish.BadName", description: "invalid stream key" });
    expect(await c.nextStatus()).toEqual({ closed: true });
    await c.closed;
    expect(c.isOpen).toBe(false);
    expect(c.sendVideo(avcKeyframeTag(), 0)).toBe(false);
    expect(publishes.map((p) => p.request.streamName)).toEqual(["wrong-key"]);
  });

  it("returns {closed: true} when the server closes without a status", async () => {
    decide = ({ request }) => {
      request.connection.close(); // at once: the refusal below finds no socket to go out on
      return { ok: false, code: "NetStream.Publish.BadName", description: "never sent" };
    };
    const c = await connect("dropped");
    expect(await c.publish()).toEqual({ closed: true });
    expect(c.statuses).toEqual([]);
    await c.closed;
    expect(publishes).toHaveLength(1);
  });

  it("closes idempotently, and the server sees its connection go", async () => {
    const c = await connect("closing");
    expect(server.openConnections).toBe(1);
    c.close();
    c.close();
    await c.closed;
    expect(await c.nextStatus()).toEqual({ closed: true });
    c.close();
    await waitFor("the server to see the connection closed", () => server.openConnections === 0, 5000, 5);
  });
});

describe("RtmpPublisher against a scripted server", () => {
  let server: ScriptedServer | undefined;
  const clients: RtmpPublisher[] = [];

  afterEach(async () => {
    for (const c of clients.splice(0)) {
      c.close();
      await c.closed;
    }
    const sessions = server?.sessions ?? [];
    await server?.close();
    server = undefined;
    // Everything the client sent was readable RTMP.
    expect(sessions.map((s) => s.error?.message)).toEqual(sessions.map(() => undefined));
  });

  async function publishTo(script: Script): Promise<{ c: RtmpPublisher; session: ScriptedSession }> {
    server = await startScriptedServer(script);
    const c = await RtmpPublisher.connect(server.url("scripted"), { timeoutMs: 5000 });
    clients.push(c);
    expect(await c.publish()).toMatchObject({ level: "status", code: "NetStream.Publish.Start" });
    expect(server.sessions).toHaveLength(1);
    return { c, session: server.sessions[0]! };
  }

  it("returns a refusal sent after NetStream.Publish.Start (for the media) from nextStatus()", async () => {
    const { c } = await publishTo({
      onMedia(session, message) {
        if (message.type !== onair.RtmpType.video) return;
        session.sendStatus("error", "NetStream.Publish.Rejected", "video codec MPEG-4 Part 2 is not supported");
        session.socket.end();
      },
    });
    expect(c.sendVideo(mpeg4Part2KeyframeTag(), 0)).toBe(true);
    expect(await c.nextStatus()).toEqual({ level: "error", code: "NetStream.Publish.Rejected", description: "video codec MPEG-4 Part 2 is not supported" });
    expect(await c.nextStatus()).toEqual({ closed: true });
    expect(c.statuses.map((s) => s.code)).toEqual(["NetStream.Publish.Start", "NetStream.Publish.Rejected"]);
  });

  it("answers pings with the request's timestamp, and no other user control event", async () => {
    const { session } = await publishTo({
      onPublishStart(s) {
        s.send(userControlMessage(onair.UserControl.streamBegin, SCRIPTED_STREAM_ID));
        s.send(userControlMessage(onair.UserControl.pingRequest, 0xdeadbeef));
        // Same chunk stream, length and type: a shorter header the client must fill in
        s.send(userControlMessage(onair.UserControl.pingRequest, 30_000, 30_000));
      },
    });
    const userControl = () => session.received.filter((m) => m.type === onair.RtmpType.userControl).map((m) => m.payload);
    await waitFor("two ping responses", () => userControl().length >= 2, 5000, 5);
    // An answer to Stream Begin would have come before the first ping's.
    expect(userControl()).toEqual([Buffer.from([0, 7, 0xde, 0xad, 0xbe, 0xef]), Buffer.from([0, 7, 0, 0, 0x75, 0x30])]);
  });

  it("acknowledges what it received each time the server's window fills, and answers Set Peer Bandwidth once per size", async () => {
    const window = 4000; // more than the handshake and the answers to connect and publish: no acknowledgement for those
    const { session } = await publishTo({
      onConnect(s) {
        s.send(onair.controlMessage(onair.RtmpType.windowAckSize, window));
        s.send(setPeerBandwidthMessage(5_000_000));
        s.send(setPeerBandwidthMessage(5_000_000));
      },
    });
    const of = (type: number) => session.received.filter((m) => m.type === type).map((m) => m.payload.readUInt32BE(0));
    expect(of(onair.RtmpType.acknowledgement)).toEqual([]);
    // The second Set Peer Bandwidth came before connect's _result: an answer to it would be in by now.
    expect(of(onair.RtmpType.windowAckSize)).toEqual([5_000_000]);

    const padding = () => session.send({ csid: 6, type: onair.RtmpType.amf0Data, streamId: 0, timestamp: 0, payload: onair.encodeAmf0(["onPadding", "x".repeat(window)]) });
    for (let round = 1; round <= 2; round++) {
      const sentBefore = session.socket.bytesWritten;
      padding();
      await waitFor(`acknowledgement ${round}`, () => of(onair.RtmpType.acknowledgement).some((a) => a > sentBefore), 5000, 5);
    }
    const acks = of(onair.RtmpType.acknowledgement);
    expect(acks.at(-1)).toBeLessThanOrEqual(session.socket.bytesWritten);
    acks.forEach((ack, i) => expect(ack - (acks[i - 1] ?? 0)).toBeGreaterThanOrEqual(window));
  });
});

describe("RtmpPublisher.connect", () => {
  it("fails with the reason when nothing listens, and after its timeout when nothing answers", async () => {
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
});
