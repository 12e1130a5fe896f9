import { spawn } from "node:child_process";
import { PassThrough, Writable } from "node:stream";
import type { RelayedMedia } from "../../../src/ingest/liveSource";
import { parseFragment, parseInit } from "../../../src/hls";
import { aacConfigFacts, av1RecordSize, hevcRecordSize, metadataSize, Mp4Muxer, Mp4PipeReader, sampleTime, type Mp4MuxerOptions } from "../../../src/ingest/mp4Pipe";
import { Amf0EcmaArray, encodeAmf0, encodeAudioTag, encodeVideoTag, RtmpServer, VideoFrameTypes } from "../../../src/rtmp";
import { boxesOf, enhancedFrames, readFragmentedMp4, type EnhancedCodec } from "../../helpers/enhancedFrames";
import { FFPROBE, waitFor } from "../../helpers/media";
import { RtmpPublisher } from "../../helpers/rtmpClient";

const HVCC = Buffer.from([1, 1, 0x60, 0, 0, 0, 0x90, 0, 0, 0, 0, 0, 0x5d, 0xf0, 0, 0xfc, 0xfd, 0xf8, 0xf8, 0, 0, 0x0f, 0]);
const ASC_48K_STEREO = Buffer.from([0x11, 0x90]);

const meta = (width: number, height: number): RelayedMedia => ({
  kind: "data",
  timestamp: 0,
  body: encodeAmf0(["onMetaData", new Amf0EcmaArray({ width, height, framerate: 30 })]),
});
const videoConfig = (record: Buffer = HVCC): RelayedMedia => ({ kind: "video", timestamp: 0, body: encodeVideoTag({ kind: "config", codec: "hvc1", record }) });
const audioConfig = (config: Buffer = ASC_48K_STEREO): RelayedMedia => ({ kind: "audio", timestamp: 0, body: encodeAudioTag({ kind: "config", codec: "mp4a", config, legacy: true }) });
function frame(timestamp: number, keyframe: boolean, compositionMs = 0, data = Buffer.from([0, 0, 0, 2, 0x26, 0x01])): RelayedMedia {
  const frameType = keyframe ? VideoFrameTypes.key : VideoFrameTypes.inter;
  return { kind: "video", timestamp, body: encodeVideoTag({ kind: "frame", codec: "hvc1", frameType, keyframe, compositionMs, data }) };
}
const aac = (timestamp: number): RelayedMedia => ({ kind: "audio", timestamp, body: encodeAudioTag({ kind: "frame", codec: "mp4a", data: Buffer.from([0x21, 0x10]), legacy: true }) });

/** Every message through one muxer; the bytes as one MP4 and whether (why) it ended. */
function mux(messages: RelayedMedia[], options?: Mp4MuxerOptions): { file: Buffer; perMessage: number[]; end?: string } {
  const muxer = new Mp4Muxer(options);
  const out: Buffer[] = [];
  const perMessage: number[] = [];
  let end: string | undefined;
  for (const m of messages) {
    const o = muxer.push(m);
    out.push(...o.bytes);
    perMessage.push(o.bytes.length);
    end ??= o.end;
  }
  return { file: Buffer.concat(out), perMessage, end };
}

describe("aacConfigFacts", () => {
  it.each([
    ["AAC-LC 44.1 kHz stereo", [0x12, 0x10], { objectType: 2, sampleRate: 44100, channels: 2 }],
    ["AAC-LC 48 kHz stereo", [0x11, 0x90], { objectType: 2, sampleRate: 48000, channels: 2 }],
    ["AAC-LC 48 kHz mono", [0x11, 0x88], { objectType: 2, sampleRate: 48000, channels: 1 }],
    ["HE-AAC 24 kHz stereo", [0x2b, 0x10], { objectType: 5, sampleRate: 24000, channels: 2 }],
    // 00010 1111, then 24 bits of rate (0x00_3e80 = 16000), then 0001: explicit 16 kHz mono.
    ["an explicit rate", [0x17, 0x80, 0x1f, 0x40, 0x08], { objectType: 2, sampleRate: 16000, channels: 1 }],
    // 11111 then 6 bits (000010: 32 + 2 = 34, layer 1), 0011 (48 kHz), 0010.
    ["an escaped object type", [0xf8, 0x46, 0x40], { objectType: 34, sampleRate: 48000, channels: 2 }],
  ])("%s", (_name, bytes, facts) => {
    expect(aacConfigFacts(Buffer.from(bytes))).toEqual(facts);
  });

  it.each([
    ["nothing", []],
    ["one byte", [0x12]],
    ["a reserved rate index", [0x16, 0x90]],
  ])("%s is no config", (_name, bytes) => {
    expect(aacConfigFacts(Buffer.from(bytes))).toBeUndefined();
  });
});

describe("metadataSize", () => {
  it("reads width and height of onMetaData, in an ECMA array or an object", () => {
    expect(metadataSize(meta(1280, 720).body)).toEqual({ width: 1280, height: 720 });
    expect(metadataSize(encodeAmf0(["onMetaData", { width: 640, height: 360.4 }]))).toEqual({ width: 640, height: 360 });
    expect(metadataSize(encodeAmf0(["onMetaData", { videocodecid: 7 }]))).toEqual({ width: 0, height: 0 });
  });

  it("is undefined for another data message or bytes that are not AMF0", () => {
    expect(metadataSize(encodeAmf0(["onCuePoint", { width: 1 }]))).toBeUndefined();
    expect(metadataSize(Buffer.from([0xff, 0]))).toBeUndefined();
  });
});

describe("sampleTime", () => {
  it.each([
    ["the origin is 0", 1000, 1000, 90000, undefined, 0],
    ["ms to 90 kHz", 1033, 1000, 90000, 0, 2970],
    ["ms to 48 kHz", 1021, 1000, 48000, 0, 1008],
    ["ms to 44.1 kHz, rounded", 1023, 1000, 44100, 0, 1014],
    ["before the origin, the track's first: dropped", 990, 1000, 48000, undefined, undefined],
    ["before the origin, later: after the previous", 990, 1000, 48000, 480, 481],
    ["back in time: just after the previous", 1020, 1000, 90000, 2970, 2971],
    ["the same time again: just after the previous", 1033, 1000, 90000, 2970, 2971],
  ])("%s", (_name, timestamp, origin, timescale, last, expected) => {
    expect(sampleTime(timestamp, origin, timescale, last)).toBe(expected);
  });
});

/** Per sample of the muxed file: track, decode time, duration, composition offset, sync. */
function samplesOf(file: Buffer): Record<number, number[][]> {
  const { tracks } = readFragmentedMp4(file);
  return Object.fromEntries(tracks.map((t) => [t.id, t.samples.map((s) => [s.decodeTime, s.duration, s.compositionOffset, s.sync ? 1 : 0])]));
}

describe("the picture size of a decoder configuration record", () => {
  it.each<[EnhancedCodec, number, number]>([
    // Not a multiple of the coding block: x265 codes more, and its conformance window crops it.
    ["hvc1", 426, 240],
    ["hvc1", 1280, 720],
    ["av01", 426, 240],
    ["av01", 1280, 720],
  ])("%s at %ix%i, as the encoder writes it", async (codec, width, height) => {
    const { videoConfig: record } = await enhancedFrames(codec, 0.1, { size: { width, height }, audio: false });
    const read = codec === "hvc1" ? hevcRecordSize : av1RecordSize;
    expect(read(record)).toEqual({ width, height });
    // Cut short, it says nothing.
    expect(read(record.subarray(0, codec === "hvc1" ? 30 : 8))).toBeUndefined();
    expect(read(Buffer.alloc(0))).toBeUndefined();
  }, 10_000);

  it("is what the init states, over what the metadata says", async () => {
    const { videoConfig: record } = await enhancedFrames("hvc1", 0.1, { size: { width: 426, height: 240 }, audio: false });
    const { file } = mux([meta(1, 1), videoConfig(record), frame(0, true)]);
    const trak = boxesOf(boxesOf(file)[1]!.body).find((b) => b.type === "trak")!;
    const tkhd = boxesOf(trak.body).find((b) => b.type === "tkhd")!.body;
    expect([tkhd.readUInt32BE(76) / 65536, tkhd.readUInt32BE(80) / 65536]).toEqual([426, 240]);
  }, 10_000);
});

describe("Mp4Muxer", () => {
  it("writes the init at the first keyframe, with the configs that came before it, and drops the frames before it", () => {
    const { file, perMessage } = mux([meta(320, 180), videoConfig(), audioConfig(), frame(900, false), aac(950), frame(1000, true), frame(1033, false)]);
    expect(perMessage).toEqual([0, 0, 0, 0, 0, 2, 1]);
    const top = boxesOf(file).map((b) => b.type);
    expect(top).toEqual(["ftyp", "moov", "moof", "mdat", "moof", "mdat"]);
    const { tracks } = readFragmentedMp4(file);
    expect(tracks.map((t) => [t.id, t.handler, t.format, t.timescale])).toEqual([
      [1, "vide", "hvc1", 90000],
      [2, "soun", "mp4a", 48000],
    ]);
    expect(tracks[0]!.config).toEqual(HVCC);
    expect(tracks[1]!.config).toEqual(ASC_48K_STEREO);
    // The video tkhd's width and height (16.16) are the metadata's.
    const trak = boxesOf(boxesOf(file)[1]!.body).find((b) => b.type === "trak")!;
    const tkhd = boxesOf(trak.body).find((b) => b.type === "tkhd")!.body;
    expect([tkhd.readUInt32BE(76) / 65536, tkhd.readUInt32BE(80) / 65536]).toEqual([320, 180]);
    // Sequence numbers count the fragments from 1.
    const moofs = boxesOf(file).filter((b) => b.type === "moof");
    expect(moofs.map((m) => boxesOf(m.body)[0]!.body.readUInt32BE(4))).toEqual([1, 2]);
  });

  it("times every track from the first frame, with durations from the previous sample and composition offsets", () => {
    const { file } = mux([videoConfig(), audioConfig(), frame(1000, true, 66), aac(990), aac(1010), frame(1033, false, 33), aac(1031), frame(1066, false, 0)]);
    expect(samplesOf(file)).toEqual({
      // 1/30 s for the first; the rest measured. 66 ms = 5940 at 90 kHz.
      1: [
        [0, 3000, 5940, 1],
        [2970, 2970, 2970, 0],
        [5940, 2970, 0, 0],
      ],
      // The sample from before the first frame is dropped; 1024 for the first AAC frame.
      2: [
        [480, 1024, 0, 1],
        [1488, 1008, 0, 1],
      ],
    });
  });

  it("never lets a clock going back make a negative duration", () => {
    const { file } = mux([videoConfig(), frame(1000, true), frame(1033, false), frame(1020, false), frame(1066, false)]);
    expect(samplesOf(file)[1]!.map(([time, duration]) => [time, duration])).toEqual([
      [0, 3000],
      [2970, 2970],
      [2971, 1],
      [5940, 2969],
    ]);
  });

  it("makes a video-only MP4 when no audio config came before the first frame, and then ignores audio", () => {
    const { file, perMessage } = mux([videoConfig(), frame(0, true), audioConfig(), aac(10), frame(33, false)]);
    expect(perMessage).toEqual([0, 2, 0, 0, 1]);
    expect(readFragmentedMp4(file).tracks.map((t) => t.handler)).toEqual(["vide"]);
  });

  it("ignores data other than onMetaData, video it cannot use, and frames of another codec", () => {
    const cue: RelayedMedia = { kind: "data", timestamp: 0, body: encodeAmf0(["onCuePoint", { width: 99 }]) };
    const garbage: RelayedMedia = { kind: "video", timestamp: 0, body: Buffer.from([0x80]) };
    const av1: RelayedMedia = { kind: "video", timestamp: 40, body: encodeVideoTag({ kind: "frame", codec: "av01", frameType: 1, keyframe: true, compositionMs: 0, data: Buffer.from([0x12, 0]) }) };
    const { perMessage } = mux([cue, garbage, frame(0, true), videoConfig(), cue, garbage, frame(10, true), av1]);
    expect(perMessage).toEqual([0, 0, 0, 0, 0, 0, 2, 0]);
  });

  it.each([
    ["the same video config again goes on", [videoConfig()], undefined, 1],
    ["a new video config ends the MP4", [videoConfig(Buffer.concat([HVCC, Buffer.from([1])]))], "video", 0],
    ["a new audio config ends the MP4", [audioConfig(Buffer.from([0x12, 0x10]))], "audio", 0],
    ["the same audio config again goes on", [audioConfig()], undefined, 1],
  ])("%s", (_name, change, ended, after) => {
    const { perMessage, end } = mux([videoConfig(), audioConfig(), frame(0, true), ...change, frame(33, false)]);
    expect(end?.match(/video|audio/)?.[0]).toBe(ended);
    expect(perMessage.at(-1)).toBe(after);
  });
});

describe("Mp4Muxer with LL-HLS parts (partSeconds 0.2)", () => {
  const PARTS = { partSeconds: 0.2 };
  /** 30 fps video on a millisecond clock (0, 33, 67, …), a keyframe at each of `keys`, and AAC frames beside it. */
  const publish = (frames: number, keys: readonly number[], withAudio = true): RelayedMedia[] => {
    const out: { t: number; m: RelayedMedia }[] = [];
    for (let i = 0; i < frames; i++) out.push({ t: i / 30, m: frame(Math.round((i * 1000) / 30), keys.includes(i)) });
    if (withAudio) for (let i = 0; (i * 1024) / 48000 < frames / 30; i++) out.push({ t: (i * 1024) / 48000, m: aac(Math.round((i * 1024 * 1000) / 48000)) });
    return out.sort((x, y) => x.t - y.t).map((x) => x.m);
  };
  const pieces = (file: Buffer) => {
    const top = boxesOf(file);
    // Each piece runs to where the next one starts: the init (ftyp + moov), then each moof + mdat.
    const until = (i: number) => top[i]?.start ?? file.length;
    const tracks = parseInit(file.subarray(0, until(2)));
    const fragments: Buffer[] = [];
    for (let i = 2; i < top.length; i += 2) fragments.push(file.subarray(top[i]!.start, until(i + 2)));
    return { top: top.map((b) => b.type), tracks, parts: fragments.map((f) => parseFragment(f, tracks)) };
  };
  const videoCounts = (parts: ReturnType<typeof pieces>["parts"]) => parts.map((p) => p.tracks.find((t) => t.id === 1)?.sampleCount ?? 0);

  it("writes the init first, then parts of 6 frames, a keyframe opening its own", () => {
    const messages = [videoConfig(), audioConfig(), ...publish(30, [0, 15])];
    const { file, perMessage } = mux(messages, PARTS);
    // The first keyframe gives the init alone: its part is still being made.
    expect(perMessage.slice(0, 3)).toEqual([0, 0, 1]);
    const { top, tracks, parts } = pieces(file);
    expect(top.slice(0, 2)).toEqual(["ftyp", "moov"]);
    expect(top.slice(2).every((t, i) => t === (i % 2 === 0 ? "moof" : "mdat"))).toBe(true);
    expect(tracks.map((t) => [t.id, t.handler])).toEqual([
      [1, "vide"],
      [2, "soun"],
    ]);
    // Frames 0-5, 6-11, 12-14 (frame 15 is a keyframe), 15-20, 21-26; 27-29 are held until finish.
    expect(videoCounts(parts)).toEqual([6, 6, 3, 6, 6]);
    expect(parts.map((p) => p.tracks.find((t) => t.id === 1)!.startsWithSync)).toEqual([true, false, false, true, false]);
    expect(parts.map((p) => p.sequence)).toEqual([1, 2, 3, 4, 5]);
  });

  it("times both tracks without gaps or overlaps from part to part, on a millisecond clock", () => {
    const muxer = new Mp4Muxer(PARTS);
    const out = [videoConfig(), audioConfig(), ...publish(60, [0, 30])].flatMap((m) => muxer.push(m).bytes);
    const file = Buffer.concat([...out, ...muxer.finish()]);
    const samples = samplesOf(file);
    expect(samples[1]).toHaveLength(60);
    for (const id of [1, 2]) {
      const track = samples[id]!;
      for (let i = 0; i + 1 < track.length; i++) expect(track[i]![0]! + track[i]![1]!).toBe(track[i + 1]![0]);
    }
  });

  it("a new decoder configuration writes the held part, then ends", () => {
    const messages = [videoConfig(), audioConfig(), ...publish(4, [0])];
    const muxer = new Mp4Muxer(PARTS);
    const before = messages.flatMap((m) => muxer.push(m).bytes);
    const changed = muxer.push(videoConfig(Buffer.concat([HVCC, Buffer.from([1])])));
    expect(changed.end).toMatch(/video decoder configuration changed/);
    // Nothing of the four frames was out before the change; all of them are in what it wrote.
    expect(before).toHaveLength(1);
    expect(changed.bytes).toHaveLength(1);
    const { parts } = pieces(Buffer.concat([...before, ...changed.bytes]));
    expect(videoCounts(parts)).toEqual([4]);
    expect(muxer.push(frame(200, true)).bytes).toEqual([]);
    expect(muxer.finish()).toEqual([]);
  });

  it("finish gives the held samples once; one fragment per frame holds nothing back", () => {
    const muxer = new Mp4Muxer(PARTS);
    const out = [videoConfig(), ...publish(3, [0], false)].flatMap((m) => muxer.push(m).bytes);
    expect(out).toHaveLength(1);
    const held = muxer.finish();
    expect(held).toHaveLength(1);
    expect(videoCounts(pieces(Buffer.concat([...out, ...held])).parts)).toEqual([3]);
    expect(muxer.finish()).toEqual([]);
    const perFrame = new Mp4Muxer();
    for (const m of [videoConfig(), ...publish(3, [0], false)]) perFrame.push(m);
    expect(perFrame.finish()).toEqual([]);
  });
});

describe("Mp4PipeReader", () => {
  it("writes the MP4 as it comes, and ends the pipe at the end of the publish", async () => {
    const pipe = new PassThrough();
    const chunks: Buffer[] = [];
    pipe.on("data", (c: Buffer) => chunks.push(c));
    const ended = new Promise((resolve) => pipe.on("end", resolve));
    const reader = new Mp4PipeReader(pipe);
    for (const m of [videoConfig(), frame(0, true), frame(33, false)]) expect(reader.sendMedia(m)).toBe(true);
    reader.endPlay();
    await ended;
    expect(readFragmentedMp4(Buffer.concat(chunks)).tracks[0]!.samples).toHaveLength(2);
    expect(reader.sendMedia(frame(66, false))).toBe(false);
  });

  it("ends the pipe on a new decoder configuration, and takes nothing after", () => {
    const pipe = new PassThrough();
    const reader = new Mp4PipeReader(pipe);
    reader.sendMedia(videoConfig());
    reader.sendMedia(frame(0, true));
    expect(reader.sendMedia(videoConfig(Buffer.from([1, 2, 3])))).toBe(false);
    expect(pipe.writableEnded).toBe(true);
    expect(reader.sendMedia(frame(33, false))).toBe(false);
  });

  it("counts what the pipe holds, is cut off by destroying it, and takes a reader's exit (EPIPE) quietly", () => {
    const stuck = new Writable({ highWaterMark: 1, write: () => undefined });
    const reader = new Mp4PipeReader(stuck);
    reader.sendMedia(videoConfig());
    reader.sendMedia(frame(0, true));
    expect(reader.bufferedBytes).toBeGreaterThan(100);
    reader.cut();
    expect(stuck.destroyed).toBe(true);
    expect(reader.sendMedia(frame(33, false))).toBe(false);
    const broken = new Writable({ write: (_c, _e, done) => done(Object.assign(new Error("write EPIPE"), { code: "EPIPE" })) });
    const gone = new Mp4PipeReader(broken);
    gone.sendMedia(videoConfig());
    expect(() => gone.sendMedia(frame(0, true))).not.toThrow();
  });
});

/** The publish's messages as a reader gets them: onMetaData, then each message as RelayedMedia. */
function relayed(stream: Awaited<ReturnType<typeof enhancedFrames>>): RelayedMedia[] {
  const { width, height, framerate } = stream.metadata;
  const metadata = { kind: "data" as const, timestamp: 0, body: encodeAmf0(["onMetaData", new Amf0EcmaArray({ width, height, framerate })]) };
  return [metadata, ...stream.messages.map((m) => ({ kind: m.type === 9 ? ("video" as const) : ("audio" as const), timestamp: m.timestamp, body: m.body }))];
}

interface Probed {
  streams: { codec_type: string; codec_name: string; width?: number; height?: number; nb_read_frames?: string }[];
}

/** ffprobe reading the pipe (`-f mov -i pipe:0`) and decoding every frame of it. */
async function probePipe(messages: RelayedMedia[]): Promise<Probed> {
  const args = ["-v", "error", "-analyzeduration", "500000", "-count_frames", "-show_entries", "stream=codec_type,codec_name,width,height,nb_read_frames", "-of", "json", "-f", "mov", "-i", "pipe:0"];
  const child = spawn(FFPROBE, args, { stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
  const reader = new Mp4PipeReader(child.stdin);
  for (const m of messages) reader.sendMedia(m);
  reader.endPlay();
  const code = await closed;
  if (code !== 0) throw new Error(`ffprobe exited ${code}: ${stderr}`);
  return JSON.parse(stdout) as Probed;
}

describe("Mp4PipeReader with real encoders and decoders", () => {
  it.each<[string, EnhancedCodec, boolean, string]>([
    ["HEVC", "hvc1", false, "hevc"],
    ["AV1", "av01", false, "av1"],
    ["H.264 (enhanced)", "avc1", false, "h264"],
    ["H.264 (legacy)", "avc1", true, "h264"],
  ])("ffmpeg reads every %s frame and every AAC frame of the pipe", async (_name, codec, legacy, name) => {
    const stream = await enhancedFrames(codec, 2, { legacy });
    expect(stream.messages[0]!.body[0]! & 0x80).toBe(legacy ? 0 : 0x80);
    expect(stream.videoFrames).toBe(60);
    if (codec === "hvc1") expect(hevcRecordSize(stream.videoConfig)).toEqual({ width: 320, height: 180 });
    if (codec === "av01") expect(av1RecordSize(stream.videoConfig)).toEqual({ width: 320, height: 180 });
    const probed = await probePipe(relayed(stream));
    const video = probed.streams.find((s) => s.codec_type === "video");
    const audio = probed.streams.find((s) => s.codec_type === "audio");
    expect(video).toMatchObject({ codec_name: name, width: 320, height: 180, nb_read_frames: String(stream.videoFrames) });
    expect(audio).toMatchObject({ codec_name: "aac", nb_read_frames: String(stream.audioFrames) });
  }, 20_000);
});

describe("Mp4PipeReader behind onair's RTMP server", () => {
  it("takes HEVC published over Enhanced RTMP, and ffmpeg reads every frame off the pipe", async () => {
    const stream = await enhancedFrames("hvc1", 1);
    const received: RelayedMedia[] = [];
    let ended!: () => void;
    const publishEnded = new Promise<void>((resolve) => (ended = resolve));
    const server = new RtmpServer({
      onPublish: async () => ({
        ok: true,
        sink: {
          media: (m) => void received.push(m.kind === "data" ? { kind: "data", timestamp: m.timestamp, body: encodeAmf0([m.name, ...m.values]) } : { kind: m.kind, timestamp: m.timestamp, body: m.body }),
          end: () => ended(),
        },
      }),
    });
    const port = await server.listen(0, "127.0.0.1");
    try {
      const publisher = await RtmpPublisher.connect(`rtmp://127.0.0.1:${port}/live/key`);
      expect(await publisher.publish()).toMatchObject({ code: "NetStream.Publish.Start" });
      publisher.sendMetadata(stream.metadata);
      for (const m of stream.messages) (m.type === 9 ? publisher.sendVideo : publisher.sendAudio).call(publisher, m.body, m.timestamp);
      // Closed once all is in: a destroyed socket drops what it has not sent.
      await waitFor("every message at the server", () => received.length === stream.messages.length + 1);
      publisher.close();
      await publishEnded;
    } finally {
      await server.close();
    }
    const probed = await probePipe(received);
    expect(probed.streams.find((s) => s.codec_type === "video")).toMatchObject({ codec_name: "hevc", width: 320, height: 180, nb_read_frames: String(stream.videoFrames) });
    expect(probed.streams.find((s) => s.codec_type === "audio")).toMatchObject({ codec_name: "aac", nb_read_frames: String(stream.audioFrames) });
  }, 15_000);
});
