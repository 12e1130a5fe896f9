import { readRtcp, type RtcpFeedback } from "../../../src/webrtc/rtcp";

// RTCP packets built from their specs: RFC 3550 6.4 (SR, RR, report blocks), RFC 4585 6.1-6.3
// (RTPFB/PSFB, generic NACK, PLI), RFC 5104 4.3.1 (FIR), draft-alvestrand-rmcat-remb (REMB).

const u16 = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];

const SENDER = 0x11223344;
const MEDIA = 0x55667788;

/** V=2, P=0, the count (or FMT), PT, length in 32-bit words minus one; the body a multiple of 4 bytes. */
function rtcp(count: number, type: number, body: number[]): number[] {
  if (body.length % 4 !== 0) throw new Error("an RTCP body is whole 32-bit words");
  return [0x80 | count, type, ...u16(body.length / 4), ...body];
}

/** A report block: SSRC, fraction lost, cumulative lost (24 bits), highest sequence, jitter, LSR, DLSR. */
const reportBlock = (fractionLost: number) => [...u32(MEDIA), fractionLost, 0x00, 0x01, 0x02, ...u32(0x0001_0203), ...u32(17), ...u32(0xabcd_ef01), ...u32(0x0000_8000)];

const rr = (...fractions: number[]) => rtcp(fractions.length, 201, [...u32(SENDER), ...fractions.flatMap(reportBlock)]);

/** Sender info: NTP timestamp (64), RTP timestamp, packet count, octet count. Bytes unlike a block's. */
const SENDER_INFO = [...u32(0xe8e8e8e8), ...u32(0x10203040), ...u32(90000), ...u32(0xc8c8c8c8), ...u32(0xfafafafa)];
const sr = (...fractions: number[]) => rtcp(fractions.length, 200, [...u32(SENDER), ...SENDER_INFO, ...fractions.flatMap(reportBlock)]);

/** REMB: PSFB FMT 15, media SSRC 0, "REMB", Num SSRC, BR Exp (6 bits), BR Mantissa (18 bits), the SSRCs. */
function remb(exponent: number, mantissa: number, ssrcs = [MEDIA], id = "REMB"): number[] {
  const fci = [...Buffer.from(id, "latin1"), ssrcs.length, (exponent << 2) | (mantissa >> 16), ...u16(mantissa & 0xffff), ...ssrcs.flatMap(u32)];
  return rtcp(15, 206, [...u32(SENDER), ...u32(0), ...fci]);
}

const pli = () => rtcp(1, 206, [...u32(SENDER), ...u32(MEDIA)]);
/** FIR: media SSRC 0, an FCI of the SSRC asked and a command sequence number with 3 reserved bytes. */
const fir = () => rtcp(4, 206, [...u32(SENDER), ...u32(0), ...u32(MEDIA), 7, 0, 0, 0]);
/** Generic NACK: FCI entries of a PID and the bitmask of lost packets following it (BLP). */
const nack = (...entries: [number, number][]) => rtcp(1, 205, [...u32(SENDER), ...u32(MEDIA), ...entries.flatMap(([pid, blp]) => [...u16(pid), ...u16(blp)])]);
/** SDES with one CNAME chunk (RFC 3550 6.5), padded to a word. */
const sdes = () => rtcp(1, 202, [...u32(SENDER), 1, 4, ...Buffer.from("abcd"), 0, 0]);

const read = (...packets: number[][]) => readRtcp(Buffer.from(packets.flat()));

describe("readRtcp", () => {
  it.each<[string, number[], RtcpFeedback[]]>([
    ["REMB of 1 Mb/s (exponent 2, mantissa 250000)", remb(2, 250_000), [{ kind: "remb", bitrate: 1_000_000 }]],
    ["REMB with exponent 0", remb(0, 12_345), [{ kind: "remb", bitrate: 12_345 }]],
    ["REMB with the largest mantissa", remb(10, 0x3ffff), [{ kind: "remb", bitrate: 0x3ffff * 1024 }]],
    ["REMB with a high exponent (past 32 bits)", remb(20, 0x20000), [{ kind: "remb", bitrate: 0x20000 * 2 ** 20 }]],
    ["REMB naming two SSRCs", remb(3, 100_000, [1, 2]), [{ kind: "remb", bitrate: 800_000 }]],
    ["REMB of zero", remb(0, 0), [{ kind: "remb", bitrate: 0 }]],
    ["an application feedback that is not REMB", remb(2, 250_000, [MEDIA], "ABCD"), []],
    ["PLI", pli(), [{ kind: "keyframe" }]],
    ["FIR", fir(), [{ kind: "keyframe" }]],
    ["a NACK of one packet", nack([100, 0]), [{ kind: "nack", packets: 1 }]],
    ["a NACK of a packet and two after it", nack([100, 0b101]), [{ kind: "nack", packets: 3 }]],
    ["a NACK with every bit of its BLP set", nack([100, 0xffff]), [{ kind: "nack", packets: 17 }]],
    ["a NACK of two entries", nack([100, 0x8001], [300, 0]), [{ kind: "nack", packets: 4 }]],
    ["transport-cc feedback (RTPFB FMT 15) is not a NACK", rtcp(15, 205, [...u32(SENDER), ...u32(MEDIA), ...u32(0), ...u32(0)]), []],
    ["an RR's fraction lost", rr(64), [{ kind: "loss", ssrc: MEDIA, fraction: 0.25 }]],
    ["an RR without loss", rr(0), [{ kind: "loss", ssrc: MEDIA, fraction: 0 }]],
    ["an RR with the most loss", rr(255), [{ kind: "loss", ssrc: MEDIA, fraction: 255 / 256 }]],
    ["an RR with two blocks", rr(32, 128), [{ kind: "loss", ssrc: MEDIA, fraction: 0.125 }, { kind: "loss", ssrc: MEDIA, fraction: 0.5 }]],
    ["an RR without blocks", rr(), []],
    ["an SR's block, after the sender info", sr(128), [{ kind: "loss", ssrc: MEDIA, fraction: 0.5 }]],
    ["an SR without blocks", sr(), []],
    ["SDES", sdes(), []],
    ["BYE", rtcp(1, 203, u32(SENDER)), []],
  ])("%s", (_what, packet, expected) => {
    expect(read(packet)).toEqual(expected);
  });

  it.each<[string, number[][], RtcpFeedback[]]>([
    // Chrome's receiver: an RR (without blocks until media flows), then REMB, in one compound packet.
    ["RR + REMB", [rr(), remb(2, 250_000)], [{ kind: "remb", bitrate: 1_000_000 }]],
    ["RR with a block + REMB", [rr(26), remb(4, 150_000)], [{ kind: "loss", ssrc: MEDIA, fraction: 26 / 256 }, { kind: "remb", bitrate: 2_400_000 }]],
    ["RR + SDES + PLI", [rr(), sdes(), pli()], [{ kind: "keyframe" }]],
    ["RR + NACK + PLI + REMB", [rr(0), nack([7, 1]), pli(), remb(1, 100_000)], [{ kind: "loss", ssrc: MEDIA, fraction: 0 }, { kind: "nack", packets: 2 }, { kind: "keyframe" }, { kind: "remb", bitrate: 200_000 }]],
    ["SR + RR", [sr(64), rr(128)], [{ kind: "loss", ssrc: MEDIA, fraction: 0.25 }, { kind: "loss", ssrc: MEDIA, fraction: 0.5 }]],
  ])("a compound %s", (_what, packets, expected) => {
    expect(read(...packets)).toEqual(expected);
  });

  it.each<[string, Buffer, RtcpFeedback[]]>([
    ["nothing", Buffer.alloc(0), []],
    ["three bytes", Buffer.from([0x81, 206, 0]), []],
    ["not version 2", Buffer.from([0x41, 206, ...u16(2), ...u32(SENDER), ...u32(MEDIA)]), []],
    ["random bytes", Buffer.from("this is not rtcp at all", "latin1"), []],
    ["a length past the end", Buffer.from(pli().slice(0, 8)), []],
    ["a REMB cut before its bitrate, its length shortened to fit", Buffer.from(rtcp(15, 206, [...u32(SENDER), ...u32(0), ...Buffer.from("REMB")])), []],
    ["an RR counting two blocks, holding one", Buffer.from(rtcp(2, 201, [...u32(SENDER), ...reportBlock(64)])), [{ kind: "loss", ssrc: MEDIA, fraction: 0.25 }]],
    ["an SR shorter than its sender info", Buffer.from(rtcp(1, 200, [...u32(SENDER), ...u32(0)])), []],
    ["RR + a REMB cut off", Buffer.from([...rr(64), ...remb(2, 250_000).slice(0, 14)]), [{ kind: "loss", ssrc: MEDIA, fraction: 0.25 }]],
    ["PLI + garbage", Buffer.from([...pli(), 0x00, 0xff, 0x12, 0x34, 0x56]), [{ kind: "keyframe" }]],
    ["PLI + a trailing two bytes", Buffer.from([...pli(), 0x81, 206]), [{ kind: "keyframe" }]],
  ])("best effort on %s, without throwing", (_what, packet, expected) => {
    expect(readRtcp(packet)).toEqual(expected);
  });
});
