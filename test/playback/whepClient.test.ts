import { spawn } from "node:child_process";
import dgram from "node:dgram";
import { FFMPEG, waitFor } from "../helpers/media";
import {
  decodeH264,
  decodeOpus,
  depacketizeH264,
  inSequenceOrder,
  oggCrc,
  oggOpus,
  opusPacketSamples,
  parseRtp,
  type OrderedPacket,
  type RtpPacketView,
} from "../helpers/whepClient";

// The WHEP viewer's own media handling, before any server: RTP parsing, sequence order,
// RFC 6184 depacketization and the Ogg Opus writer, by table, then on real RTP from ffmpeg's
// packetizers decoded back by ffmpeg. A viewer test that fails should fail on the server.

const rtp = (seq: number, payload: number[], opts: { ssrc?: number; csrcs?: number; extensionWords?: number; padding?: number } = {}): Buffer => {
  const csrcs = opts.csrcs ?? 0;
  const ext = opts.extensionWords === undefined ? [] : [0xbe, 0xde, 0, opts.extensionWords, ...Array(opts.extensionWords * 4).fill(7)];
  const padding = opts.padding ? [...Array(opts.padding - 1).fill(0), opts.padding] : [];
  const header = Buffer.alloc(12);
  header[0] = 0x80 | (opts.padding ? 0x20 : 0) | (opts.extensionWords !== undefined ? 0x10 : 0) | csrcs;
  header[1] = 96;
  header.writeUInt16BE(seq & 0xffff, 2);
  header.writeUInt32BE(opts.ssrc ?? 1, 8);
  return Buffer.concat([header, Buffer.alloc(csrcs * 4, 9), Buffer.from(ext), Buffer.from(payload), Buffer.from(padding)]);
};

const ordered = (payloads: [number, number[]][]): OrderedPacket[] => payloads.map(([index, p]) => ({ ssrc: 1, seq: index & 0xffff, index, payload: Buffer.from(p) }));
const annexB = (...units: number[][]) => Buffer.concat(units.flatMap((u) => [Buffer.from([0, 0, 0, 1]), Buffer.from(u)]));

describe("RTP parsing", () => {
  it.each([
    ["a bare header", rtp(7, [0x65, 1, 2]), [0x65, 1, 2]],
    ["two CSRCs", rtp(7, [0x65, 1], { csrcs: 2 }), [0x65, 1]],
    ["a one-word header extension", rtp(7, [0x41, 3], { extensionWords: 1 }), [0x41, 3]],
    ["three bytes of padding", rtp(7, [0x41, 3, 4], { padding: 3 }), [0x41, 3, 4]],
  ])("takes off %s", (_, packet, payload) => {
    expect(parseRtp(packet)).toEqual({ ssrc: 1, seq: 7, payload: Buffer.from(payload) });
  });

  it.each([
    ["shorter than a header", Buffer.alloc(11, 0x80)],
    ["of version 1", Buffer.from([0x40, ...Array(12).fill(0)])],
    ["with nothing after its header", rtp(1, [])],
    ["with more padding than payload", Buffer.concat([rtp(1, [1]).subarray(0, 12).map((b, i) => (i === 0 ? b | 0x20 : b)), Buffer.from([1, 5])])],
  ])("refuses a packet %s", (_, packet) => {
    expect(parseRtp(packet)).toBeUndefined();
  });
});

describe("sequence order", () => {
  const view = (seq: number, ssrc = 1): RtpPacketView => ({ ssrc, seq, payload: Buffer.from([seq & 0xff]) });
  it.each([
    ["in order", [1, 2, 3], [1, 2, 3]],
    ["reordered", [1, 3, 2, 4], [1, 2, 3, 4]],
    ["duplicated", [1, 2, 2, 3, 1], [1, 2, 3]],
    ["across the 16-bit wrap", [65534, 65535, 0, 1], [65534, 65535, 65536, 65537]],
    ["reordered across the wrap", [65535, 1, 0, 2], [65535, 65536, 65537, 65538]],
    ["a late packet from before the first", [10, 11, 9, 12], [9, 10, 11, 12]],
  ])("%s", (_, arrivals, indexes) => {
    expect(inSequenceOrder(arrivals.map((s) => view(s))).map((p) => p.index)).toEqual(indexes);
  });

  it("keeps a new SSRC's packets after the first's, never consecutive with them", () => {
    const out = inSequenceOrder([view(100, 1), view(101, 1), view(5, 2), view(102, 1), view(6, 2)]);
    expect(out.map((p) => [p.ssrc, p.seq])).toEqual([[1, 100], [1, 101], [1, 102], [2, 5], [2, 6]]);
    expect(out[3]!.index - out[2]!.index).toBeGreaterThan(1);
  });
});

describe("H.264 depacketization (RFC 6184)", () => {
  const SPS = [0x67, 0x42, 0xe0, 0x1f];
  const PPS = [0x68, 0xce, 0x3c];
  // An IDR slice (nri 3, type 5) cut in three fragments: FU indicator 0x7c, FU headers S/-/E.
  const FU = (header: number, ...data: number[]) => [0x7c, header, ...data];
  it.each([
    ["single NAL units", [[1, [0x65, 1, 2]], [2, [0x41, 3]]], annexB([0x65, 1, 2], [0x41, 3])],
    ["a STAP-A with SPS and PPS", [[1, [0x78, 0, 4, ...SPS, 0, 3, ...PPS]]], annexB(SPS, PPS)],
    ["a STAP-A whose last size runs past its end", [[1, [0x78, 0, 4, ...SPS, 0, 9, ...PPS]]], annexB(SPS)],
    ["a whole FU-A", [[1, FU(0x85, 1)], [2, FU(0x05, 2)], [3, FU(0x45, 3)]], annexB([0x65, 1, 2, 3])],
    ["a FU-A missing its middle", [[1, FU(0x85, 1)], [3, FU(0x45, 3)], [4, [0x41, 9]]], annexB([0x41, 9])],
    ["a FU-A missing its start", [[2, FU(0x05, 2)], [3, FU(0x45, 3)], [4, [0x41, 9]]], annexB([0x41, 9])],
    ["a FU-A missing its end", [[1, FU(0x85, 1)], [2, FU(0x05, 2)], [3, [0x41, 9]]], annexB([0x41, 9])],
    ["a FU-A restarted by a new start", [[1, FU(0x85, 1)], [2, FU(0x85, 7)], [3, FU(0x45, 8)]], annexB([0x65, 7, 8])],
    ["a FU-A start and end in one packet", [[1, FU(0xc5, 1, 2)]], annexB([0x65, 1, 2])],
    ["the unit types mode 1 does not use", [[1, [0x19, 0, 0, 1]], [2, [0x1d, 0x85, 1]], [3, [0x41, 9]]], annexB([0x41, 9])],
  ] as [string, [number, number[]][], Buffer][])("%s", (_, packets, expected) => {
    expect(depacketizeH264(ordered(packets))).toEqual(expected);
  });

  it("keeps the NAL header's F and NRI bits from the FU indicator, its type from the FU header", () => {
    expect(depacketizeH264(ordered([[1, [0x5c, 0xc1, 0xaa]]]))).toEqual(annexB([0x41, 0xaa]));
  });
});

describe("Opus in Ogg", () => {
  it.each([
    ["CELT 20 ms, one frame", [0xf8], 960],
    ["CELT 2.5 ms, one frame", [0x80], 120],
    ["SILK 60 ms, one frame", [0x18], 2880],
    ["Hybrid 10 ms, two equal frames", [0x61], 960],
    ["CELT 20 ms, two frames of their own sizes", [0xfa, 3], 1920],
    ["CELT 5 ms, code 3 with five frames", [0x8b, 0x05], 1200],
    ["an empty packet", [], 0],
  ])("%s decodes to its samples", (_, packet, samples) => {
    expect(opusPacketSamples(Buffer.from(packet))).toBe(samples);
  });

  it("checksums pages with Ogg's CRC-32 (the check value of '123456789')", () => {
    expect(oggCrc(Buffer.from("123456789"))).toBe(0x89a1897f);
  });

  it("writes OpusHead and OpusTags pages, then one page a packet with the samples so far", () => {
    const file = oggOpus([Buffer.from([0xf8, 1]), Buffer.from([0xf8, 2])]);
    const pages = pagesOf(file);
    expect(pages.map((p) => [p.flags, p.granule, p.sequence])).toEqual([[2, 0n, 0], [0, 0n, 1], [0, 960n, 2], [4, 1920n, 3]]);
    expect(pages[0]!.body.subarray(0, 8).toString()).toBe("OpusHead");
    expect(pages[1]!.body.subarray(0, 8).toString()).toBe("OpusTags");
    for (const p of pages) expect(p.crcOk).toBe(true);
  });

  it("laces a packet of a multiple of 255 bytes with a final zero", () => {
    const [, , page] = pagesOf(oggOpus([Buffer.alloc(510, 0xf8)]));
    expect(page!.lacing).toEqual([255, 255, 0]);
    expect(page!.body.length).toBe(510);
  });
});

/** Reads the pages of an Ogg file the writer made (one packet a page). */
function pagesOf(file: Buffer) {
  const pages: { flags: number; granule: bigint; sequence: number; lacing: number[]; body: Buffer; crcOk: boolean }[] = [];
  for (let at = 0; at < file.length; ) {
    expect(file.subarray(at, at + 4).toString()).toBe("OggS");
    const count = file[at + 26]!;
    const lacing = [...file.subarray(at + 27, at + 27 + count)];
    const size = 27 + count + lacing.reduce((a, b) => a + b, 0);
    const page = Buffer.from(file.subarray(at, at + size));
    const crc = page.readUInt32LE(22);
    page.writeUInt32LE(0, 22);
    pages.push({ flags: page[5]!, granule: page.readBigInt64LE(6), sequence: page.readUInt32LE(18), lacing, body: page.subarray(27 + count), crcOk: oggCrc(page) === crc });
    at += size;
  }
  return pages;
}

describe("real RTP from ffmpeg, decoded back", () => {
  it("depacketizes ffmpeg's H.264 RTP (FU-A and single units) into 60 decodable 160x90 frames", async () => {
    const packets = await ffmpegRtp(["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-frames:v", "60", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", "-bsf:v", "h264_mp4toannexb", "-payload_type", "96"], (seen) => seen.filter((p) => p[1]! & 0x80).length === 60);
    // Reordered in flight: the depacketizer puts them back.
    const shuffled = packets.map((p, i) => packets[i % 2 === 0 ? Math.min(i + 1, packets.length - 1) : i - 1]!);
    const views = shuffled.flatMap((p) => parseRtp(p) ?? []);
    const fragmented = views.filter((v) => (v.payload[0]! & 0x1f) === 28).length;
    expect(fragmented).toBeGreaterThan(0);
    const decoded = await decodeH264(depacketizeH264(inSequenceOrder(views)));
    expect(decoded.errors).toBe("");
    expect(decoded.frames).toHaveLength(60);
    expect(decoded.frames.every((f) => f.width === 160 && f.height === 90)).toBe(true);
    expect(decoded.frames.filter((f) => f.pictType === "I")).toHaveLength(2);

    // The first keyframe's middle lost: the unit is dropped whole, and its GOP with it.
    const inOrder = inSequenceOrder(views);
    const idrStarts = inOrder.flatMap((v, i) => ((v.payload[0]! & 0x1f) === 28 && (v.payload[1]! & 0x9f) === 0x85 ? [i] : []));
    expect(idrStarts).toHaveLength(2);
    const lossy = await decodeH264(depacketizeH264(inOrder.filter((_, i) => i !== idrStarts[0]! + 1)));
    expect(lossy.frames).toHaveLength(30);
    // The second one's middle garbled instead: the decoder reports it.
    const garbled = inOrder.map((v, i) => (i === idrStarts[1]! + 1 ? { ...v, payload: Buffer.concat([v.payload.subarray(0, 2), Buffer.alloc(v.payload.length - 2, 0xa5)]) } : v));
    expect((await decodeH264(depacketizeH264(garbled))).errors).toMatch(/error|corrupt|concealing/i);
  });

  it("writes ffmpeg's Opus RTP payloads into an Ogg file ffmpeg decodes without error; garbage does not", async () => {
    const packets = await ffmpegRtp(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-frames:a", "50", "-c:a", "libopus", "-b:a", "64k", "-ac", "2", "-payload_type", "111"], (seen) => seen.length === 50);
    const payloads = inSequenceOrder(packets.flatMap((p) => parseRtp(p) ?? [])).map((p) => p.payload);
    expect(payloads.reduce((n, p) => n + opusPacketSamples(p), 0)).toBe(48_000);
    expect(await decodeOpus(payloads)).toEqual({ errors: "" });
    // Code 3 with no frames is not an Opus packet (RFC 6716 3.2.5).
    expect((await decodeOpus([...payloads.slice(0, 10), Buffer.from([0xfb, 0x00]), ...payloads.slice(10)])).errors).not.toBe("");
  });
});

/** ffmpeg encodes and sends RTP to a loopback socket; the packets once `done` says they are all there. */
async function ffmpegRtp(args: string[], done: (seen: Buffer[]) => boolean): Promise<Buffer[]> {
  const socket = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const seen: Buffer[] = [];
  socket.on("message", (p) => seen.push(p));
  const child = spawn(FFMPEG, ["-hide_banner", "-nostdin", "-loglevel", "error", ...args, "-f", "rtp", `rtp://127.0.0.1:${socket.address().port}?pkt_size=1200`], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  try {
    await waitFor(`ffmpeg's RTP (${stderr})`, () => done(seen), 20_000, 20);
    return seen.filter((p) => p[1]! < 192 || p[1]! > 223);
  } finally {
    child.kill("SIGKILL");
    socket.close();
  }
}
