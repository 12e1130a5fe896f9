// What a WebRTC player tells its sender over RTCP (RFC 3550, RFC 4585, REMB): its bandwidth
// estimate, requests for a keyframe, lost packets. A pure reader of compound packets.

export type RtcpFeedback =
  /** Receiver Estimated Maximum Bitrate (draft-alvestrand-rmcat-remb), in bits per second. */
  | { kind: "remb"; bitrate: number }
  /** Picture Loss Indication or Full Intra Request: the decoder needs a keyframe. */
  | { kind: "keyframe" }
  /** Generic NACK (RFC 4585 6.2.1): how many packets it asks to have again. */
  | { kind: "nack"; packets: number }
  /** A receiver report block's fraction lost (0-1) since the previous report, of the source `ssrc`. */
  | { kind: "loss"; ssrc: number; fraction: number };

const SR = 200;
const RR = 201;
const RTPFB = 205;
const PSFB = 206;

/** Every feedback item of a compound RTCP packet; a malformed tail is ignored. */
export function readRtcp(packet: Buffer): RtcpFeedback[] {
  const items: RtcpFeedback[] = [];
  for (let at = 0; at + 4 <= packet.length; ) {
    if (packet[at]! >> 6 !== 2) break;
    const count = packet[at]! & 0x1f;
    const type = packet[at + 1]!;
    const end = at + 4 * (packet.readUInt16BE(at + 2) + 1);
    if (end > packet.length) break;
    const body = packet.subarray(at + 4, end);
    if (type === SR || type === RR) items.push(...reportBlocks(body.subarray(type === SR ? 24 : 4), count));
    else if (type === RTPFB && count === 1) items.push({ kind: "nack", packets: nackCount(body.subarray(8)) });
    else if (type === PSFB && (count === 1 || count === 4)) items.push({ kind: "keyframe" });
    else if (type === PSFB && count === 15) {
      const remb = rembBitrate(body.subarray(8));
      if (remb !== undefined) items.push({ kind: "remb", bitrate: remb });
    }
    at = end;
  }
  return items;
}

function reportBlocks(blocks: Buffer, count: number): RtcpFeedback[] {
  const out: RtcpFeedback[] = [];
  for (let i = 0; i < count && (i + 1) * 24 <= blocks.length; i++) out.push({ kind: "loss", ssrc: blocks.readUInt32BE(i * 24), fraction: blocks[i * 24 + 4]! / 256 });
  return out;
}

/** Each FCI entry is a lost packet id and a bitmask of the 16 after it. */
function nackCount(fci: Buffer): number {
  let packets = 0;
  for (let at = 0; at + 4 <= fci.length; at += 4) {
    let mask = fci.readUInt16BE(at + 2);
    packets++;
    for (; mask; mask &= mask - 1) packets++;
  }
  return packets;
}

/** "REMB", a count of SSRCs, then the bitrate as a 6-bit exponent and an 18-bit mantissa. */
function rembBitrate(fci: Buffer): number | undefined {
  if (fci.length < 8 || fci.toString("latin1", 0, 4) !== "REMB") return undefined;
  const exponent = fci[5]! >> 2;
  const mantissa = ((fci[5]! & 0x03) << 16) | fci.readUInt16BE(6);
  return mantissa * 2 ** exponent;
}
