import { spawn } from "node:child_process";
import { encodeAudioTag, encodeVideoTag, readAudioTag, readVideoTag, VideoFrameTypes } from "../../src/rtmp";
import { FFMPEG } from "./media";
import type { RtmpPublisher } from "./rtmpClient";

// Real HEVC, AV1 or H.264 (and AAC) as an Enhanced RTMP publisher sends it: ffmpeg encodes a
// test pattern and a tone to fragmented MP4 (its FLV muxer, in 5.1, writes neither HEVC nor AV1),
// a small reader takes the decoder configurations and samples out of it, and each becomes the
// video or audio message body an E-RTMP encoder (OBS) would publish, in publishing order.

export type EnhancedCodec = "hvc1" | "av01" | "avc1";

/** One RTMP media message: type 9 video, 8 audio; timestamp in ms (the decode time). */
export interface EnhancedMessage {
  type: 8 | 9;
  timestamp: number;
  body: Buffer;
}

export interface EnhancedStream {
  /** The video sequence start, the AAC sequence header (with audio), then every frame by decode time. */
  messages: EnhancedMessage[];
  /** What an onMetaData of this publish says. */
  metadata: { width: number; height: number; framerate: number };
  /** The video decoder configuration record (hvcC, av1C or avcC payload) and the AudioSpecificConfig. */
  videoConfig: Buffer;
  audioConfig: Buffer | undefined;
  videoFrames: number;
  audioFrames: number;
}

export interface EnhancedOptions {
  size?: { width: number; height: number };
  fps?: number;
  /** Keyframe interval, in frames (default: one a second). */
  gop?: number;
  audio?: boolean;
  /** avc1 only: the legacy (pre-E-RTMP, CodecID 7) tag form, as a non-enhanced publisher sends H.264. */
  legacy?: boolean;
  /** ffmpeg's video encoder options, instead of the codec's default encoder. */
  encoder?: string[];
}

const ENCODERS: Record<EnhancedCodec, string[]> = {
  hvc1: ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error", "-tag:v", "hvc1"],
  av01: ["-c:v", "libsvtav1", "-preset", "12", "-svtav1-params", "lp=1"],
  avc1: ["-c:v", "libx264", "-preset", "ultrafast"],
};

/** Encodes `seconds` of testsrc2 (+ a 440 Hz tone) with `codec` and returns it as E-RTMP messages. */
export async function enhancedFrames(codec: EnhancedCodec, seconds: number, options: EnhancedOptions = {}): Promise<EnhancedStream> {
  const { size = { width: 320, height: 180 }, fps = 30, audio = true } = options;
  const gop = options.gop ?? fps;
  const args = [
    "-hide_banner", "-nostdin", "-loglevel", "error",
    "-f", "lavfi", "-i", `testsrc2=size=${size.width}x${size.height}:rate=${fps}`,
    ...(audio ? ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"] : []),
    "-t", String(seconds), "-map", "0:v", ...(audio ? ["-map", "1:a", "-c:a", "aac", "-b:a", "64k"] : []),
    ...(options.encoder ?? ENCODERS[codec]), "-g", String(gop), "-pix_fmt", "yuv420p",
    "-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-f", "mp4", "pipe:1",
  ];
  const mp4 = await runFfmpeg(args);
  const file = readFragmentedMp4(mp4);
  const video = file.tracks.find((t) => t.handler === "vide");
  if (!video?.config) throw new Error(`no ${codec} track with a decoder configuration in ffmpeg's output`);
  const sound = file.tracks.find((t) => t.handler === "soun");
  return {
    messages: messagesOf(codec, video, sound, options.legacy === true && codec === "avc1", fps),
    metadata: { width: size.width, height: size.height, framerate: fps },
    videoConfig: video.config,
    audioConfig: sound?.config,
    videoFrames: video.samples.length,
    audioFrames: sound?.samples.length ?? 0,
  };
}

/**
 * An encoder's own ladder as OBS's enhanced broadcasting sends it: the top rendition as track 0
 * (plain enhanced packets), each other one as one-track multitrack messages of its own id,
 * frame by frame beside track 0's (the encodes share their frame times).
 */
export function multitrackLadder(top: EnhancedStream, others: EnhancedStream[]): EnhancedStream {
  const videoOf = (s: EnhancedStream) => s.messages.filter((m) => m.type === 9);
  const otherVideo = others.map(videoOf);
  let k = 0;
  const messages: EnhancedMessage[] = top.messages.flatMap((m) => {
    if (m.type !== 9) return [m];
    const i = k++;
    const extra = otherVideo.map((list, n) => {
      const packet = readVideoTag(list[i]!.body);
      if (packet.kind !== "config" && packet.kind !== "frame") throw new Error(`an unexpected ${packet.kind} packet`);
      return { type: 9 as const, timestamp: m.timestamp, body: encodeVideoTag({ kind: "multitrack", layout: "oneTrack", tracks: [{ trackId: n + 1, packet }] }) };
    });
    return [m, ...extra];
  });
  return { ...top, messages };
}

/** A decoder configuration (of any track), which a publisher sends once, before the frames. */
function isSequenceHeader(m: EnhancedMessage): boolean {
  if (m.type === 8) return readAudioTag(m.body).kind === "config";
  const tag = readVideoTag(m.body);
  return tag.kind === "config" || (tag.kind === "multitrack" && tag.tracks.every((t) => t.packet.kind === "config"));
}

/**
 * Publishes an encoded stream in real time (each message at its timestamp); resolves once all is
 * sent, or the socket is gone. With `loop`, sends it again and again until that signal aborts, as
 * a live encoder would: the configurations once, the timestamps running on from round to round.
 */
export async function publishPaced(client: RtmpPublisher, encoded: EnhancedStream, options: { loop?: AbortSignal } = {}): Promise<void> {
  client.sendMetadata(encoded.metadata);
  const start = Date.now();
  const stop = options.loop;
  // A round is the video's length; the audio past the last frame (AAC frames do not end on a
  // video frame) is left out, or its timestamps would run into the next round's first.
  const period = Math.round((encoded.videoFrames * 1000) / encoded.metadata.framerate);
  const firstFrame = encoded.messages.findIndex((m) => !isSequenceHeader(m));
  for (let round = 0; ; round++) {
    const messages = stop === undefined ? encoded.messages : encoded.messages.slice(round === 0 ? 0 : firstFrame).filter((m) => m.timestamp < period);
    for (const m of messages) {
      const timestamp = m.timestamp + round * period;
      const wait = start + timestamp - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (stop?.aborted) return;
      if (!(m.type === 9 ? client.sendVideo(m.body, timestamp) : client.sendAudio(m.body, timestamp))) return;
    }
    if (stop === undefined || stop.aborted) return;
  }
}

function messagesOf(codec: EnhancedCodec, video: Mp4FileTrack, sound: Mp4FileTrack | undefined, legacy: boolean, fps: number): EnhancedMessage[] {
  const form = legacy ? { legacy: true as const } : {};
  const ms = (t: number, track: Mp4FileTrack) => Math.round((t * 1000) / track.timescale);
  const head: EnhancedMessage[] = [{ type: 9, timestamp: 0, body: encodeVideoTag({ kind: "config", codec, record: video.config!, ...form }) }];
  if (sound?.config) head.push({ type: 8, timestamp: 0, body: encodeAudioTag({ kind: "config", codec: "mp4a", config: sound.config, legacy: true }) });
  // Frame n at n frame periods, as an encoder's clock stamps it: ffmpeg's MP4 delays the frames
  // after the first by the AAC priming (21 ms), a gap after the first keyframe no encoder makes.
  const frames: EnhancedMessage[] = video.samples.map((s, n) => {
    const timestamp = Math.round((n * 1000) / fps);
    const frameType = s.sync ? VideoFrameTypes.key : VideoFrameTypes.inter;
    const compositionMs = codec === "av01" ? 0 : ms(s.decodeTime + s.compositionOffset, video) - ms(s.decodeTime, video);
    return { type: 9, timestamp, body: encodeVideoTag({ kind: "frame", codec, frameType, keyframe: s.sync, compositionMs, data: s.data, ...form }) };
  });
  const sounds: EnhancedMessage[] = (sound?.samples ?? []).map((s) => ({
    type: 8,
    timestamp: ms(s.decodeTime, sound!),
    body: encodeAudioTag({ kind: "frame", codec: "mp4a", data: s.data, legacy: true }),
  }));
  // Interleaved by decode time, video first on a tie (a stable sort keeps each track's order).
  return [...head, ...[...frames, ...sounds].sort((a, b) => a.timestamp - b.timestamp)];
}

function runFfmpeg(args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(FFMPEG, args, { stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`ffmpeg exited ${code}: ${stderr}`))));
  });
}

// ---- a small fragmented-MP4 reader (ISO/IEC 14496-12), enough for what ffmpeg writes ----

export interface Mp4FileSample {
  decodeTime: number;
  duration: number;
  compositionOffset: number;
  sync: boolean;
  data: Buffer;
}

export interface Mp4FileTrack {
  id: number;
  handler: string;
  timescale: number;
  /** The sample entry's FourCC (hvc1, av01, avc1, mp4a). */
  format: string;
  /** hvcC / av1C / avcC payload, or the esds's AudioSpecificConfig. */
  config: Buffer | undefined;
  samples: Mp4FileSample[];
}

interface Box {
  type: string;
  /** Where the box starts in the buffer it was read from. */
  start: number;
  body: Buffer;
}

/** The boxes one after another in `buf` (a file, or a box's body). */
export function boxesOf(buf: Buffer): Box[] {
  const boxes: Box[] = [];
  for (let at = 0; at + 8 <= buf.length; ) {
    let size = buf.readUInt32BE(at);
    let header = 8;
    if (size === 1) {
      size = Number(buf.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) size = buf.length - at;
    if (size < header || at + size > buf.length) throw new Error(`a box of ${size} bytes at ${at} does not fit`);
    boxes.push({ type: buf.toString("latin1", at + 4, at + 8), start: at, body: buf.subarray(at + header, at + size) });
    at += size;
  }
  return boxes;
}

const child = (buf: Buffer, type: string) => boxesOf(buf).find((b) => b.type === type)?.body;
const path = (buf: Buffer, ...types: string[]) => types.reduce<Buffer | undefined>((b, t) => (b ? child(b, t) : undefined), buf);

/** The init's tracks and every fragment's samples. */
export function readFragmentedMp4(file: Buffer): { tracks: Mp4FileTrack[] } {
  const top = boxesOf(file);
  const moov = top.find((b) => b.type === "moov");
  if (!moov) throw new Error("no moov");
  const tracks = boxesOf(moov.body).filter((b) => b.type === "trak").map((t) => readTrak(t.body));
  for (const box of top) if (box.type === "moof") readMoof(file, box, tracks);
  return { tracks };
}

function readTrak(trak: Buffer): Mp4FileTrack {
  const tkhd = path(trak, "tkhd")!;
  const id = tkhd.readUInt32BE(tkhd[0] === 1 ? 20 : 12);
  const mdhd = path(trak, "mdia", "mdhd")!;
  const timescale = mdhd.readUInt32BE(mdhd[0] === 1 ? 20 : 12);
  const handler = path(trak, "mdia", "hdlr")!.toString("latin1", 8, 12);
  const stsd = path(trak, "mdia", "minf", "stbl", "stsd")!;
  const entry = boxesOf(stsd.subarray(8))[0]!;
  // The children of a visual sample entry start 78 bytes in, those of an audio one 28 (version 0).
  const children = entry.body.subarray(handler === "vide" ? 78 : 28);
  const configBox = boxesOf(children).find((b) => ["hvcC", "av1C", "avcC", "esds"].includes(b.type));
  const config = configBox?.type === "esds" ? decoderSpecificInfo(configBox.body) : configBox?.body;
  return { id, handler, timescale, format: entry.type, config, samples: [] };
}

/** The DecoderSpecificInfo (tag 5) inside an esds: for AAC, the AudioSpecificConfig. */
function decoderSpecificInfo(esds: Buffer): Buffer | undefined {
  let at = 4; // version and flags
  while (at < esds.length) {
    const tag = esds[at++]!;
    let length = 0;
    for (let i = 0; i < 4; i++) {
      const b = esds[at++]!;
      length = (length << 7) | (b & 0x7f);
      if ((b & 0x80) === 0) break;
    }
    if (tag === 5) return esds.subarray(at, at + length);
    // Descend into ES_Descriptor (3) and DecoderConfigDescriptor (4), skip the rest.
    if (tag === 3) at += 3;
    else if (tag === 4) at += 13;
    else at += length;
  }
  return undefined;
}

function readMoof(file: Buffer, moof: Box, tracks: Mp4FileTrack[]): void {
  for (const traf of boxesOf(moof.body).filter((b) => b.type === "traf")) {
    const tfhd = path(traf.body, "tfhd")!;
    const flags = tfhd.readUInt32BE(0) & 0xffffff;
    const track = tracks.find((t) => t.id === tfhd.readUInt32BE(4));
    if (!track) continue;
    let at = 8;
    let base = moof.start;
    if (flags & 0x1) (base = Number(tfhd.readBigUInt64BE(at))), (at += 8);
    if (flags & 0x2) at += 4;
    const defaults = { duration: 0, size: 0, flags: 0 };
    if (flags & 0x8) (defaults.duration = tfhd.readUInt32BE(at)), (at += 4);
    if (flags & 0x10) (defaults.size = tfhd.readUInt32BE(at)), (at += 4);
    if (flags & 0x20) defaults.flags = tfhd.readUInt32BE(at);
    const tfdt = path(traf.body, "tfdt");
    let time = tfdt ? (tfdt[0] === 1 ? Number(tfdt.readBigUInt64BE(4)) : tfdt.readUInt32BE(4)) : 0;
    for (const trun of boxesOf(traf.body).filter((b) => b.type === "trun")) {
      time = readTrun(file, trun.body, base, defaults, time, track);
    }
  }
}

function readTrun(file: Buffer, trun: Buffer, base: number, defaults: { duration: number; size: number; flags: number }, time: number, track: Mp4FileTrack): number {
  const flags = trun.readUInt32BE(0) & 0xffffff;
  const count = trun.readUInt32BE(4);
  let at = 8;
  let offset = base;
  if (flags & 0x1) (offset = base + trun.readInt32BE(at)), (at += 4);
  let firstFlags: number | undefined;
  if (flags & 0x4) (firstFlags = trun.readUInt32BE(at)), (at += 4);
  for (let i = 0; i < count; i++) {
    const field = (bit: number, fallback: number) => {
      if (!(flags & bit)) return fallback;
      const v = trun.readInt32BE(at);
      at += 4;
      return v;
    };
    const duration = field(0x100, defaults.duration);
    const size = field(0x200, defaults.size);
    const sampleFlags = field(0x400, i === 0 && firstFlags !== undefined ? firstFlags : defaults.flags);
    const compositionOffset = field(0x800, 0);
    // sample_is_non_sync_sample: bit 16 of the sample flags.
    const sync = track.handler !== "vide" || (sampleFlags & 0x1_0000) === 0;
    track.samples.push({ decodeTime: time, duration, compositionOffset, sync, data: file.subarray(offset, offset + size) });
    offset += size;
    time += duration;
  }
  return time;
}
