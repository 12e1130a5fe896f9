import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { childBoxes, Fmp4Splitter, parseFragment, parseInit, type InitTrack } from "../../../src/hls";
import { codecString, fragment, initSegment, type Mp4FragmentPart, type Mp4Sample, type Mp4Track } from "../../../src/mp4";

// Round trips through the real encoders: ffmpeg encodes two seconds into fragmented MP4, the
// config records and samples are read back out of it (the packager's parser for the boxes it
// knows, the trun here), the writer writes them again, and ffmpeg must decode the same frames
// from our file as from its own, with ffprobe seeing the same streams.

const FFMPEG = "/usr/bin/ffmpeg";
const FFPROBE = "/usr/bin/ffprobe";
const FRAGMENTED = ["-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-f", "mp4"];
const VIDEO_IN = ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25"];
const AUDIO_IN = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"];

interface ReadSample extends Mp4Sample {
  decodeTime: number;
}

interface ReadTrack {
  init: InitTrack;
  entry: string;
  /** The payload of the sample entry's configuration box (avcC, hvcC, …, dOps; esds's ASC). */
  config: Buffer;
  samples: ReadSample[];
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-mp4-"));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });

const payloadOf = (buf: Buffer, type: string) => childBoxes(buf).find((b) => b.type === type)?.payload;
function path_(buf: Buffer, ...types: string[]): Buffer {
  let at = buf;
  for (const t of types) {
    const next = payloadOf(at, t);
    if (!next) throw new Error(`no ${t} box on the way to ${types.join("/")}`);
    at = next;
  }
  return at;
}

/** The AudioSpecificConfig inside an esds payload (after version and flags): descriptor 3 → 4 → 5. */
function audioSpecificConfig(esds: Buffer): Buffer {
  let at = 4;
  const header = () => {
    const tag = esds[at++]!;
    let length = 0;
    for (;;) {
      const b = esds[at++]!;
      length = (length << 7) | (b & 0x7f);
      if (!(b & 0x80)) return { tag, length };
    }
  };
  expect(header().tag).toBe(3);
  const flags = esds[at + 2]!;
  at += 3 + (flags & 0x80 ? 2 : 0) + (flags & 0x40 ? 1 + esds[at + 3]! : 0) + (flags & 0x20 ? 2 : 0);
  expect(header().tag).toBe(4);
  at += 13;
  const specific = header();
  expect(specific.tag).toBe(5);
  return esds.subarray(at, at + specific.length);
}

function readTrack(moov: Buffer, init: InitTrack): ReadTrack {
  const trak = childBoxes(moov).find((b) => b.type === "trak" && payloadOf(b.payload, "tkhd")!.readUInt32BE(12) === init.id)!.payload;
  const stsd = path_(trak, "mdia", "minf", "stbl", "stsd");
  const entry = childBoxes(stsd.subarray(8))[0]!;
  const children = childBoxes(entry.payload.subarray(init.handler === "vide" ? 78 : 28));
  const configBox = children.find((b) => ["avcC", "hvcC", "av1C", "vpcC", "esds", "dOps"].includes(b.type))!;
  const config = configBox.type === "esds" ? audioSpecificConfig(configBox.payload) : configBox.payload;
  return { init, entry: entry.type, config, samples: [] };
}

/** The samples of one traf, from its tfhd, tfdt and truns (the moof starts the fragment). */
function readTraf(fragmentBytes: Buffer, traf: Buffer, tracks: Map<number, ReadTrack>): void {
  const tfhd = path_(traf, "tfhd");
  const tfhdFlags = tfhd.readUInt32BE(0) & 0xffffff;
  expect(tfhdFlags & 0x1).toBe(0); // base data offset: ffmpeg's +default_base_moof writes none
  const track = tracks.get(tfhd.readUInt32BE(4))!;
  let at = 8;
  const optional = (flag: number, fallback: number) => (tfhdFlags & flag ? tfhd.readUInt32BE((at += 4) - 4) : fallback);
  optional(0x2, 0);
  const defaults = { duration: optional(0x8, track.init.defaults.duration), size: optional(0x10, track.init.defaults.size), flags: optional(0x20, track.init.defaults.flags) };
  const tfdt = path_(traf, "tfdt");
  let decodeTime = tfdt[0] === 1 ? Number(tfdt.readBigUInt64BE(4)) : tfdt.readUInt32BE(4);
  for (const trun of childBoxes(traf).filter((b) => b.type === "trun").map((b) => b.payload)) {
    const flags = trun.readUInt32BE(0) & 0xffffff;
    const count = trun.readUInt32BE(4);
    let pos = 8;
    let dataAt = flags & 0x1 ? trun.readInt32BE((pos += 4) - 4) : 0;
    const first = flags & 0x4 ? trun.readUInt32BE((pos += 4) - 4) : undefined;
    for (let i = 0; i < count; i++) {
      const duration = flags & 0x100 ? trun.readUInt32BE((pos += 4) - 4) : defaults.duration;
      const size = flags & 0x200 ? trun.readUInt32BE((pos += 4) - 4) : defaults.size;
      let sampleFlags = flags & 0x400 ? trun.readUInt32BE((pos += 4) - 4) : defaults.flags;
      if (i === 0 && first !== undefined) sampleFlags = first;
      const compositionOffset = flags & 0x800 ? (trun[0] === 1 ? trun.readInt32BE((pos += 4) - 4) : trun.readUInt32BE((pos += 4) - 4)) : 0;
      const data = Buffer.from(fragmentBytes.subarray(dataAt, dataAt + size));
      track.samples.push({ duration, size, compositionOffset, keyframe: !(sampleFlags & 0x1_0000), data, decodeTime });
      dataAt += size;
      decodeTime += duration;
    }
  }
}

/** The tracks of a fragmented MP4, each with its configuration and all its samples. */
function readFmp4(bytes: Buffer): ReadTrack[] {
  const pieces = new Fmp4Splitter().push(bytes);
  const init = pieces.find((p) => p.kind === "init")!.bytes;
  const moov = path_(init, "moov");
  const tracks = new Map(parseInit(init).map((t) => [t.id, readTrack(moov, t)]));
  for (const piece of pieces.filter((p) => p.kind === "fragment")) {
    for (const traf of childBoxes(path_(piece.bytes, "moof")).filter((b) => b.type === "traf")) readTraf(piece.bytes, traf.payload, tracks);
  }
  return [...tracks.values()];
}

/** An OpusHead (RFC 7845 5.1) with the fields of a dOps payload: what Enhanced RTMP sends. */
function opusHeadOf(dOps: Buffer): Buffer {
  const head = Buffer.alloc(19);
  head.write("OpusHead", 0, "latin1");
  head.writeUInt8(1, 8);
  head.writeUInt8(dOps[1]!, 9);
  head.writeUInt16LE(dOps.readUInt16BE(2), 10);
  head.writeUInt32LE(dOps.readUInt32BE(4), 12);
  head.writeInt16LE(dOps.readInt16BE(8), 16);
  head.writeUInt8(dOps[10]!, 18);
  return Buffer.concat([head, dOps.subarray(11)]);
}

/** The track as a publisher would describe it: configurations in their Enhanced RTMP form. */
function asPublished(t: ReadTrack): Mp4Track {
  const { id, timescale } = t.init;
  switch (t.entry) {
    case "avc1":
    case "hvc1":
    case "hev1":
    case "av01":
      return { id, kind: "video", codec: t.entry === "hev1" ? "hvc1" : t.entry, config: t.config, width: t.init.width!, height: t.init.height!, timescale };
    case "vp09":
      // The record without vpcC's version and flags, as the Enhanced RTMP spec lays it out.
      return { id, kind: "video", codec: "vp09", config: t.config.subarray(4), width: t.init.width!, height: t.init.height!, timescale };
    case "mp4a":
      return { id, kind: "audio", codec: "mp4a", config: t.config, channels: t.init.channels!, sampleRate: t.init.sampleRate!, timescale };
    case "Opus":
      return { id, kind: "audio", codec: "Opus", config: opusHeadOf(t.config), channels: t.init.channels!, sampleRate: t.init.sampleRate!, timescale };
    default:
      throw new Error(`no round trip for ${t.entry}`);
  }
}

/**
 * The samples again as fragments: the first track decides where they start (each keyframe of
 * video, each second of audio), the others follow by decode time.
 */
function refragment(tracks: ReadTrack[]): Buffer[] {
  const lead = tracks[0]!;
  const starts: number[] = [];
  for (const s of lead.samples) {
    const last = starts[starts.length - 1];
    const cut = lead.init.handler === "vide" ? s.keyframe : last === undefined || s.decodeTime - last >= lead.init.timescale;
    if (cut || last === undefined) starts.push(s.decodeTime);
  }
  const bounds = starts.map((t) => t / lead.init.timescale).concat(Infinity);
  bounds[0] = -Infinity;
  return starts.map((_, k) => {
    const parts: Mp4FragmentPart[] = tracks
      .map((t) => {
        const samples = t.samples.filter((s) => s.decodeTime / t.init.timescale >= bounds[k]! && s.decodeTime / t.init.timescale < bounds[k + 1]!);
        return { trackId: t.init.id, baseDecodeTime: samples[0]?.decodeTime ?? 0, samples };
      })
      .filter((p) => p.samples.length > 0);
    return fragment(k + 1, parts);
  });
}

const frameHashes = (file: string) =>
  run(FFMPEG, ["-v", "error", "-i", file, "-f", "framemd5", "-"])
    .toString()
    .split("\n")
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => {
      const f = l.split(",").map((s) => s.trim());
      return `${f[0]}:${f[5]}`; // stream index and the decoded frame's md5; not its timestamps
    });

const streams = (file: string) =>
  (JSON.parse(run(FFPROBE, ["-v", "error", "-show_streams", "-of", "json", file]).toString()) as { streams: Record<string, unknown>[] }).streams.map((s) => ({
    codec_name: s.codec_name,
    codec_type: s.codec_type,
    width: s.width,
    height: s.height,
    sample_rate: s.sample_rate,
    channels: s.channels,
  }));

/** Encodes with `args`, rewrites the result with the writer, and compares the two files. */
function roundTrip(name: string, args: string[]): { tracks: Mp4Track[]; ours: Buffer } {
  const theirs = path.join(dir, `${name}-ffmpeg.mp4`);
  run(FFMPEG, ["-v", "error", ...args, "-t", "2", ...FRAGMENTED, theirs]);
  const read = readFmp4(fs.readFileSync(theirs));
  const tracks = read.map(asPublished);
  const ours = Buffer.concat([initSegment(tracks), ...refragment(read)]);
  const oursFile = path.join(dir, `${name}-ours.mp4`);
  fs.writeFileSync(oursFile, ours);
  expect(streams(oursFile)).toEqual(streams(theirs));
  const expected = frameHashes(theirs);
  expect(expected.length).toBeGreaterThan(40);
  expect(frameHashes(oursFile)).toEqual(expected);
  return { tracks, ours };
}

/** What the packager's own parser reads from our file: one init, then fragments it accepts. */
function packagerView(ours: Buffer) {
  const pieces = new Fmp4Splitter().push(ours);
  const init = parseInit(pieces[0]!.bytes);
  const fragments = pieces.slice(1).map((p) => parseFragment(p.bytes, init));
  return { init, fragments };
}

describe("round trips through ffmpeg's encoders", () => {
  it("H.264 (libx264, B-frames): same frames, one fragment per GOP, a codec string the packager agrees with", () => {
    const { tracks, ours } = roundTrip("h264", [...VIDEO_IN, "-c:v", "libx264", "-g", "25", "-pix_fmt", "yuv420p"]);
    const { init, fragments } = packagerView(ours);
    expect(init[0]!.codec).toBe(codecString(tracks[0]!));
    expect(codecString(tracks[0]!)).toMatch(/^avc1\.64[0-9a-f]{4}$/);
    expect(fragments.length).toBe(2);
    expect(fragments.every((f) => f.tracks[0]!.startsWithSync)).toBe(true);
    expect(fragments.map((f) => f.sequence)).toEqual([1, 2]);
  });

  it("HEVC (libx265)", () => {
    const { tracks } = roundTrip("hevc", [...VIDEO_IN, "-c:v", "libx265", "-x265-params", "log-level=error", "-g", "25", "-tag:v", "hvc1"]);
    expect(codecString(tracks[0]!)).toBe("hvc1.1.6.L60.90");
  });

  it("AV1 (libsvtav1)", () => {
    const { tracks } = roundTrip("av1", [...VIDEO_IN, "-c:v", "libsvtav1", "-preset", "12", "-g", "25"]);
    expect(codecString(tracks[0]!)).toMatch(/^av01\.0\.\d\dM\.08$/);
  });

  it("VP9 (libvpx-vp9), its record sent without vpcC's version and flags", () => {
    const { tracks } = roundTrip("vp9", [...VIDEO_IN, "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", "25"]);
    expect(codecString(tracks[0]!)).toMatch(/^vp09\.00\.\d\d\.08$/);
  });

  it("AAC (ffmpeg's encoder), stereo 48 kHz", () => {
    const { tracks, ours } = roundTrip("aac", [...AUDIO_IN, "-ac", "2", "-c:a", "aac"]);
    expect(codecString(tracks[0]!)).toBe("mp4a.40.2");
    expect(packagerView(ours).init[0]).toMatchObject({ codec: "mp4a.40.2", channels: 2, sampleRate: 48000 });
  });

  it("Opus (libopus), configured by an OpusHead", () => {
    const { tracks } = roundTrip("opus", [...AUDIO_IN, "-ac", "2", "-c:a", "libopus"]);
    expect(codecString(tracks[0]!)).toBe("opus");
  });

  it("H.264 and AAC in one file: two trafs per fragment, their samples in that order in the mdat", () => {
    const { ours } = roundTrip("muxed", [...VIDEO_IN, ...AUDIO_IN, "-c:v", "libx264", "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac"]);
    const { fragments } = packagerView(ours);
    expect(fragments.every((f) => f.tracks.map((t) => t.id).join() === "1,2")).toBe(true);
  });
});
