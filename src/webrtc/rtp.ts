// Reading the few things onair needs from RTP packets (RFC 3550) carrying H.264 (RFC 6184).

/** RTCP packet types (200-206) share the port with RTP under rtcp-mux (RFC 5761). */
export function isRtcp(packet: Uint8Array): boolean {
  return packet.length >= 2 && packet[1]! >= 192 && packet[1]! <= 223;
}

/** Where an RTP packet's payload starts (after CSRCs and a header extension); undefined if malformed. */
export function rtpPayloadOffset(packet: Uint8Array): number | undefined {
  if (packet.length < 12 || packet[0]! >> 6 !== 2) return undefined;
  let offset = 12 + (packet[0]! & 0x0f) * 4;
  if (packet[0]! & 0x10) {
    if (packet.length < offset + 4) return undefined;
    offset += 4 + ((packet[offset + 2]! << 8) | packet[offset + 3]!) * 4;
  }
  return offset < packet.length ? offset : undefined;
}

const IDR = 5;
const SPS = 7;
const STAP_A = 24;
const FU_A = 28;

/**
 * Whether an H.264 RTP packet starts a keyframe: an IDR slice or an SPS, alone, in an
 * aggregation (STAP-A) or as the first fragment (FU-A). Until one comes, onair asks for one.
 */
export function startsH264Keyframe(packet: Uint8Array): boolean {
  const at = rtpPayloadOffset(packet);
  if (at === undefined) return false;
  const type = packet[at]! & 0x1f;
  if (type === IDR || type === SPS) return true;
  if (type === FU_A) return packet.length > at + 1 && (packet[at + 1]! & 0x80) !== 0 && [IDR, SPS].includes(packet[at + 1]! & 0x1f);
  if (type === STAP_A) {
    for (let i = at + 1; i + 2 < packet.length; ) {
      const size = (packet[i]! << 8) | packet[i + 1]!;
      const nal = packet[i + 2]! & 0x1f;
      if (nal === IDR || nal === SPS) return true;
      i += 2 + size;
    }
  }
  return false;
}

/** The fields of an RTP packet onair reads (RFC 3550 5.1), its payload without padding. */
export interface RtpPacket {
  payloadType: number;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Buffer;
}

export function readRtp(packet: Buffer): RtpPacket | undefined {
  if (isRtcp(packet)) return undefined;
  const at = rtpPayloadOffset(packet);
  if (at === undefined) return undefined;
  const padding = packet[0]! & 0x20 ? packet[packet.length - 1]! : 0;
  if (at + padding > packet.length) return undefined;
  return {
    payloadType: packet[1]! & 0x7f,
    sequence: packet.readUInt16BE(2),
    timestamp: packet.readUInt32BE(4),
    ssrc: packet.readUInt32BE(8),
    payload: packet.subarray(at, packet.length - padding),
  };
}

/** A random non-zero SSRC (RFC 3550 8.1). */
export const randomSsrc = () => (Math.floor(Math.random() * 0xfffffffe) + 1) >>> 0;
