import { isRtcp, randomSsrc, readRtp, startsH264Keyframe, type RtpPacket } from "../../../src/webrtc/rtp";

// RTP packets built from RFC 3550 5.1 (fixed header, CSRCs, padding) and 5.3.1 (header extension),
// H.264 payloads from RFC 6184 5.6-5.8.

const u16 = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];

interface Header {
  pt?: number;
  marker?: boolean;
  sequence?: number;
  timestamp?: number;
  ssrc?: number;
  csrcs?: number[];
  /** The extension's 32-bit words (after its profile and length). */
  extension?: number[];
  /** Padding bytes at the end, the last one their count (RFC 3550 5.1, P). */
  padding?: number;
}

/** V=2 | P | X | CC, M | PT, sequence, timestamp, SSRC, CSRCs, extension, payload, padding. */
function rtpPacket(h: Header, payload: number[]): Buffer {
  const csrcs = h.csrcs ?? [];
  const first = 0x80 | (h.padding ? 0x20 : 0) | (h.extension ? 0x10 : 0) | csrcs.length;
  const ext = h.extension ? [0xbe, 0xde, ...u16(h.extension.length), ...h.extension.flatMap(u32)] : [];
  const pad = h.padding ? [...Array<number>(h.padding - 1).fill(0), h.padding] : [];
  return Buffer.from([
    first, (h.marker ? 0x80 : 0) | (h.pt ?? 96), ...u16(h.sequence ?? 1), ...u32(h.timestamp ?? 0), ...u32(h.ssrc ?? 1),
    ...csrcs.flatMap(u32), ...ext, ...payload, ...pad,
  ]);
}

describe("readRtp", () => {
  const fields = { payloadType: 96, sequence: 0x1234, timestamp: 0xdeadbeef, ssrc: 0xcafebabe };
  const h = { pt: 96, sequence: 0x1234, timestamp: 0xdeadbeef, ssrc: 0xcafebabe };
  it.each<[string, Buffer, RtpPacket]>([
    ["the fixed header", rtpPacket(h, [1, 2, 3]), { ...fields, payload: Buffer.from([1, 2, 3]) }],
    ["the marker bit is not part of the payload type", rtpPacket({ ...h, marker: true, pt: 111 }, [9]), { ...fields, payloadType: 111, payload: Buffer.from([9]) }],
    ["the largest sequence and timestamp, unsigned", rtpPacket({ ...h, sequence: 0xffff, timestamp: 0xffffffff, ssrc: 0xffffffff }, [9]), { payloadType: 96, sequence: 0xffff, timestamp: 0xffffffff, ssrc: 0xffffffff, payload: Buffer.from([9]) }],
    ["two CSRCs before the payload", rtpPacket({ ...h, csrcs: [0x0a0b0c0d, 0x01020304] }, [7, 8]), { ...fields, payload: Buffer.from([7, 8]) }],
    ["a header extension before the payload", rtpPacket({ ...h, extension: [0x10aa0000, 0x22bbcc00] }, [5, 6]), { ...fields, payload: Buffer.from([5, 6]) }],
    ["an empty header extension", rtpPacket({ ...h, extension: [] }, [5]), { ...fields, payload: Buffer.from([5]) }],
    ["CSRCs and an extension", rtpPacket({ ...h, csrcs: [0x0a0b0c0d], extension: [0x10aa0000] }, [4]), { ...fields, payload: Buffer.from([4]) }],
    ["padding removed", rtpPacket({ ...h, padding: 3 }, [1, 2, 3]), { ...fields, payload: Buffer.from([1, 2, 3]) }],
    ["a single padding byte removed", rtpPacket({ ...h, padding: 1 }, [1, 2]), { ...fields, payload: Buffer.from([1, 2]) }],
    ["padding removed after CSRCs and an extension", rtpPacket({ ...h, csrcs: [1], extension: [2], padding: 4 }, [1, 2, 3]), { ...fields, payload: Buffer.from([1, 2, 3]) }],
    ["nothing but padding (a bandwidth probe)", rtpPacket({ ...h, padding: 4 }, []), { ...fields, payload: Buffer.alloc(0) }],
  ])("%s", (_what, packet, expected) => {
    expect(readRtp(packet)).toEqual(expected);
  });

  it.each<[string, Buffer]>([
    ["an RTCP receiver report", Buffer.from([0x80, 201, 0, 1, ...u32(1)])],
    ["an RTCP PLI", Buffer.from([0x81, 206, 0, 2, ...u32(1), ...u32(2)])],
    ["an RTCP sender report, 28 bytes", Buffer.from([0x80, 200, 0, 6, ...Array<number>(24).fill(0)])],
    ["version 1", Buffer.from([0x40, ...rtpPacket(h, [1]).subarray(1)])],
    ["version 0", Buffer.from([0x00, ...rtpPacket(h, [1]).subarray(1)])],
    ["eleven bytes", rtpPacket(h, []).subarray(0, 11)],
    ["nothing", Buffer.alloc(0)],
    ["CSRCs counted past the end", Buffer.from([0x83, 96, ...u16(1), ...u32(0), ...u32(1), ...u32(7), 1, 2])],
    ["an extension header cut off", Buffer.from([0x90, 96, ...u16(1), ...u32(0), ...u32(1), 0xbe, 0xde])],
    ["an extension longer than the packet", Buffer.from([0x90, 96, ...u16(1), ...u32(0), ...u32(1), 0xbe, 0xde, 0, 3, ...u32(0), 1])],
    ["padding longer than the payload", Buffer.from([0xa0, 96, ...u16(1), ...u32(0), ...u32(1), 1, 2, 9])],
  ])("refuses %s", (_what, packet) => {
    expect(readRtp(packet)).toBeUndefined();
  });

});

describe("randomSsrc", () => {
  afterEach(() => jest.restoreAllMocks());

  it.each<[string, number, number]>([
    ["the smallest random number gives 1, never 0", 0, 1],
    ["the largest gives 0xfffffffe", 1 - 2 ** -53, 0xfffffffe],
    ["a half gives the middle", 0.5, 0x7fffffff + 1],
  ])("%s", (_what, random, expected) => {
    jest.spyOn(Math, "random").mockReturnValue(random);
    expect(randomSsrc()).toBe(expected);
  });

  it("is a non-zero unsigned 32-bit integer, and varies", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 1000; i++) {
      const ssrc = randomSsrc();
      expect(Number.isInteger(ssrc)).toBe(true);
      expect(ssrc).toBeGreaterThan(0);
      expect(ssrc).toBeLessThanOrEqual(0xffffffff);
      seen.add(ssrc);
    }
    expect(seen.size).toBeGreaterThan(990);
  });
});

describe("startsH264Keyframe", () => {
  const rtp = (payload: number[], header: number[] = [0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]) => Uint8Array.from([...header, ...payload]);
  it.each([
    ["an IDR slice", rtp([0x65, 0x88]), true],
    ["an SPS", rtp([0x67, 0x42]), true],
    ["a non-IDR slice", rtp([0x41, 0x9a]), false],
    ["an FU-A starting an IDR", rtp([0x7c, 0x85, 0x00]), true],
    ["an FU-A continuing an IDR", rtp([0x7c, 0x05, 0x00]), false],
    ["a STAP-A with SPS and PPS", rtp([0x78, 0x00, 0x02, 0x67, 0x42, 0x00, 0x02, 0x68, 0xce]), true],
    ["a STAP-A without", rtp([0x78, 0x00, 0x02, 0x41, 0x9a]), false],
    ["a header extension before an IDR", rtp([0x00, 0x01, 0xaa, 0xbb, 0xcc, 0xdd, 0x65], [0x90, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0xbe, 0xde]), true],
    ["too short", Uint8Array.from([0x80, 96, 0]), false],
  ])("%s → keyframe start %s", (_what, packet, expected) => {
    expect(startsH264Keyframe(packet)).toBe(expected);
  });
});

describe("isRtcp", () => {
  it("tells RTCP from RTP under rtcp-mux", () => {
    expect(isRtcp(Uint8Array.from([0x80, 200]))).toBe(true);
    expect(isRtcp(Uint8Array.from([0x81, 206]))).toBe(true);
    expect(isRtcp(Uint8Array.from([0x80, 96]))).toBe(false);
    expect(isRtcp(Uint8Array.from([0x80, 0xe0]))).toBe(false);
  });
});
