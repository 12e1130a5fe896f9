import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { aacObjectType, Fmp4Error, Fmp4Splitter, parseFragment, parseInit, type Fmp4Piece } from "../../../src/hls";
import { initSegment, type Mp4Track } from "../../../src/mp4";
import { fmp4FromPipes } from "../../helpers/fmp4";

// The fragmented-MP4 reader of the packager: the splitter on hand-made boxes, then on what the
// real (Debian) ffmpeg writes to a pipe, checked against ffprobe.

const box = (type: string, payload: Buffer = Buffer.alloc(0)) => {
  const h = Buffer.alloc(8);
  h.writeUInt32BE(8 + payload.length, 0);
  h.write(type, 4, "latin1");
  return Buffer.concat([h, payload]);
};
const largeBox = (type: string, payload: Buffer) => {
  const h = Buffer.alloc(16);
  h.writeUInt32BE(1, 0);
  h.write(type, 4, "latin1");
  h.writeBigUInt64BE(BigInt(16 + payload.length), 8);
  return Buffer.concat([h, payload]);
};

const feed = (s: Fmp4Splitter, bytes: Buffer, chunk: number) => {
  const out: Fmp4Piece[] = [];
  for (let i = 0; i < bytes.length; i += chunk) out.push(...s.push(bytes.subarray(i, i + chunk)));
  return out;
};

describe("Fmp4Splitter", () => {
  const stream = Buffer.concat([
    box("ftyp", Buffer.from("iso6")),
    box("moov", Buffer.from("tracks")),
    box("prft", Buffer.alloc(12)),
    box("moof", Buffer.from("m1")),
    largeBox("mdat", Buffer.from("data-one")),
    box("styp"),
    box("moof", Buffer.from("m2")),
    box("mdat", Buffer.from("data-two")),
  ]);

  it.each([1, 3, 7, 64, stream.length])("gives the init, then each moof+mdat as one fragment, fed %i bytes at a time", (chunk) => {
    const out = feed(new Fmp4Splitter(), stream, chunk);
    expect(out.map((p) => p.kind)).toEqual(["init", "fragment", "fragment"]);
    expect(out[0]!.bytes).toEqual(Buffer.concat([box("ftyp", Buffer.from("iso6")), box("moov", Buffer.from("tracks"))]));
    expect(out[1]!.bytes).toEqual(Buffer.concat([box("moof", Buffer.from("m1")), largeBox("mdat", Buffer.from("data-one"))]));
    expect(out[2]!.bytes.includes(Buffer.from("prft"))).toBe(false);
  });

  it("a new init mid-stream (a new encoder run) comes out as a new init", () => {
    const again = Buffer.concat([stream, box("ftyp"), box("moov", Buffer.from("other")), box("moof"), box("mdat")]);
    expect(feed(new Fmp4Splitter(), again, 5).map((p) => p.kind)).toEqual(["init", "fragment", "fragment", "init", "fragment"]);
  });

  it.each([
    ["a box smaller than its header", Buffer.from([0, 0, 0, 4, 0x6d, 0x6f, 0x6f, 0x66]), /4 bytes/],
    ["an mdat with no moof", box("mdat", Buffer.from("x")), /without a moof/],
    ["two moofs in a row", Buffer.concat([box("moof"), box("moof")]), /mdat is missing/],
    ["a box running to the end of the file", Buffer.from([0, 0, 0, 0, 0x6d, 0x64, 0x61, 0x74]), /end of the file/],
    ["binary garbage", Buffer.from([0, 0, 0, 9, 1, 2, 3, 4, 5]), /not ISO-BMFF/],
    ["a size past the limit", Buffer.from([0x7f, 0xff, 0xff, 0xff, 0x6d, 0x64, 0x61, 0x74]), /larger than/],
  ])("refuses %s", (_what, bytes, message) => {
    expect(() => new Fmp4Splitter().push(bytes)).toThrow(Fmp4Error);
    expect(() => new Fmp4Splitter().push(bytes)).toThrow(message);
  });
});

describe("aacObjectType", () => {
  // ES_Descriptor (3) > DecoderConfigDescriptor (4, MPEG-4 audio 0x40) > DecoderSpecificInfo (5).
  const esds = (specific: number[], lengthBytes = 1) => {
    const len = (n: number) => (lengthBytes === 1 ? [n] : [0x80, 0x80, 0x80, n]);
    const dsi = [5, ...len(specific.length), ...specific];
    const dcd = [4, ...len(13 + dsi.length), 0x40, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, ...dsi];
    return Buffer.from([3, ...len(3 + dcd.length), 0, 1, 0, ...dcd]);
  };
  it.each([
    ["AAC-LC", [0x12, 0x10], 1, 2],
    ["HE-AAC", [0x2b, 0x92], 1, 5],
    ["an escaped object type (AAC-ELD, 39)", [0xf8, 0xe0], 1, 39],
    ["4-byte descriptor lengths", [0x12, 0x10], 4, 2],
  ])("%s", (_name, specific, lengthBytes, aot) => {
    expect(aacObjectType(esds(specific as number[], lengthBytes as number))).toBe(aot);
  });
  it("is undefined for what is not MPEG-4 audio", () => {
    expect(aacObjectType(Buffer.from([3, 3, 0, 1, 0]))).toBeUndefined();
  });
});

describe("what ffmpeg writes to a pipe", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-fmp4-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** 3 s of testsrc2 + sine, decoded once, split into two renditions, each fMP4 to its own pipe. */
  async function encode(): Promise<[Fmp4Piece[], Fmp4Piece[]]> {
    const args = [
      "-hide_banner", "-loglevel", "error",
      "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=3",
      "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=3",
      "-filter_complex", "[0:v]fps=30,split=2[a][b];[a]scale=640:360[va];[b]scale=320:180[vb]",
    ];
    for (const [label, fd] of [["va", 3], ["vb", 4]] as const) {
      args.push(
        "-map", `[${label}]`, "-map", "1:a",
        "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-bf", "0", "-pix_fmt", "yuv420p",
        "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-force_key_frames", "expr:gte(t,n_forced*1)",
        "-c:a", "aac", "-b:a", "96k", "-ac", "2",
        "-f", "mp4", "-movflags", "+frag_keyframe+empty_moov+default_base_moof+skip_trailer+cmaf", "-frag_duration", "200000",
        `pipe:${fd}`,
      );
    }
    return (await fmp4FromPipes(args, 2)) as [Fmp4Piece[], Fmp4Piece[]];
  }

  let renditions: [Fmp4Piece[], Fmp4Piece[]];
  beforeAll(async () => {
    renditions = await encode();
  });

  it("each rendition is one init, then 200 ms fragments with a keyframe starting every fifth", () => {
    for (const [i, pieces] of renditions.entries()) {
      expect(pieces[0]!.kind).toBe("init");
      expect(pieces.filter((p) => p.kind === "init")).toHaveLength(1);
      const tracks = parseInit(pieces[0]!.bytes);
      const video = tracks.find((t) => t.handler === "vide")!;
      const audio = tracks.find((t) => t.handler === "soun")!;
      expect(video.codec).toMatch(/^avc1\.(64|4d|42)00[0-9a-f]{2}$/);
      expect([video.width, video.height]).toEqual(i === 0 ? [640, 360] : [320, 180]);
      expect(audio).toMatchObject({ codec: "mp4a.40.2", channels: 2, sampleRate: 48000 });

      const fragments = pieces.slice(1).map((p) => parseFragment(p.bytes, tracks));
      expect(fragments.length).toBeGreaterThanOrEqual(14);
      const v = fragments.map((f) => f.tracks.find((t) => t.id === video.id)!);
      // Every whole fragment is 6 frames at 30 fps; the last may be shorter.
      for (const t of v.slice(0, -1)) expect(t.duration / video.timescale).toBeCloseTo(0.2, 3);
      expect(v.map((t) => t.startsWithSync)).toEqual(v.map((_, n) => n % 5 === 0));
      // Each fragment starts where the previous ended, and sequence numbers go up by one.
      v.slice(1).forEach((t, n) => expect(t.baseDecodeTime).toBe(v[n]!.baseDecodeTime + v[n]!.duration));
      fragments.slice(1).forEach((f, n) => expect(f.sequence).toBe(fragments[n]!.sequence + 1));
    }
  });

  it("the same picture has the same decode time in both renditions", () => {
    const starts = renditions.map((pieces) => {
      const tracks = parseInit(pieces[0]!.bytes);
      const video = tracks.find((t) => t.handler === "vide")!;
      return pieces.slice(1).map((p) => parseFragment(p.bytes, tracks).tracks.find((t) => t.id === video.id)!.baseDecodeTime / video.timescale);
    });
    expect(starts[1]).toEqual(starts[0]);
  });

  it("init + a fragment that starts with a keyframe decodes on its own (ffprobe), beginning with that keyframe", () => {
    const [pieces] = renditions;
    const file = path.join(dir, "part.mp4");
    fs.writeFileSync(file, Buffer.concat([pieces[0]!.bytes, pieces[6]!.bytes]));
    const probe = spawnSync("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=key_frame,pict_type", "-of", "csv=p=0", file], { encoding: "utf8" });
    expect(probe.status).toBe(0);
    const frames = probe.stdout.trim().split("\n");
    expect(frames).toHaveLength(6);
    expect(frames[0]).toMatch(/^1,I/);
    expect(frames.slice(1).every((f) => f.startsWith("0,"))).toBe(true);
  });
});

describe("parseInit: the RFC 6381 string of each video sample entry src/mp4 writes", () => {
  type Codec = "avc1" | "hvc1" | "av01" | "vp09";
  const videoInit = (codec: Codec, configHex: string) => {
    const track: Mp4Track = { id: 1, kind: "video", codec, config: Buffer.from(configHex, "hex"), width: 640, height: 360, timescale: 90000 };
    const audio: Mp4Track = { id: 2, kind: "audio", codec: "mp4a", config: Buffer.from("1190", "hex"), channels: 2, sampleRate: 48000, timescale: 48000 };
    return initSegment([track, audio]);
  };
  /** The same init with the first `from` after the stsd renamed `to`: another entry type, or a record box gone. */
  const renamed = (init: Buffer, from: string, to: string) => {
    const out = Buffer.from(init);
    const at = out.indexOf(from, out.indexOf("stsd"), "latin1");
    if (at < 0) throw new Error(`no ${from} in the init`);
    out.write(to, at, "latin1");
    return out;
  };
  // Records from codecString's tests: x265, SVT-AV1 and libvpx-vp9 as they wrote them.
  const HVCC = "0101600000009000000000005af000fcfdf8f800000f04";
  const AV1C = "81000c000a0b";
  const AVCC = "0164001fffe1000467640000";

  it.each<[string, Buffer, string]>([
    ["avc1 (x264 High 3.1)", videoInit("avc1", AVCC), "avc1.64001f"],
    ["avc3: its own prefix, the record's numbers", renamed(videoInit("avc1", AVCC), "avc1", "avc3"), "avc3.64001f"],
    ["hvc1 (x265 Main 3.0)", videoInit("hvc1", HVCC), "hvc1.1.6.L90.90"],
    ["hev1: its own prefix, the record's numbers", renamed(videoInit("hvc1", HVCC), "hvc1", "hev1"), "hev1.1.6.L90.90"],
    ["hvc1, high tier, profile space 1, two constraint bytes", videoInit("hvc1", "01610000000080b0000000005d"), "hvc1.A1.0.H93.80.b0"],
    ["av01 (SVT-AV1 Main, level 2.0, 8 bits)", videoInit("av01", AV1C), "av01.0.00M.08"],
    ["av01 Main level 5.1, 10 bits", videoInit("av01", "810d4c"), "av01.0.13M.10"],
    ["vp09 sent with vpcC's version and flags", videoInit("vp09", "010000000014820202020000"), "vp09.00.20.08"],
    ["vp09 profile 2, 10 bits, the record alone", videoInit("vp09", "021fa20101010000"), "vp09.02.31.10"],
  ])("%s", (_name, init, codec) => {
    const [video, audio] = parseInit(init);
    expect(video).toMatchObject({ id: 1, handler: "vide", timescale: 90000, codec, width: 640, height: 360 });
    expect(audio).toMatchObject({ id: 2, handler: "soun", codec: "mp4a.40.2", channels: 2, sampleRate: 48000 });
  });

  it.each<[string, Buffer, string]>([
    ["hvc1 without its hvcC", renamed(videoInit("hvc1", HVCC), "hvcC", "free"), "hvc1"],
    ["hev1 without its hvcC", renamed(renamed(videoInit("hvc1", HVCC), "hvc1", "hev1"), "hvcC", "free"), "hev1"],
    ["av01 without its av1C", renamed(videoInit("av01", AV1C), "av1C", "free"), "av01"],
    ["vp09 without its vpcC", renamed(videoInit("vp09", "010000000014820202020000"), "vpcC", "free"), "vp09"],
    ["hvc1 with a record too short to read", videoInit("hvc1", "01016000000090"), "hvc1"],
    ["av01 with a record too short to read", videoInit("av01", "81"), "av01"],
  ])("%s: the entry type alone", (_name, init, codec) => {
    expect(parseInit(init)[0]).toMatchObject({ handler: "vide", codec, width: 640, height: 360 });
  });
});
