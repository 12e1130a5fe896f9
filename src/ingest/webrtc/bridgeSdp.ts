// The SDP a WHIP bridge's ffmpeg reads the forwarded RTP with. A pure function of text.

/** The forwarded tracks as ffmpeg's RTP input sees them: loopback ports, the negotiated formats. */
export interface RtpInput {
  video: { port: number; payloadType: number; fmtp: string | undefined };
  audio?: { port: number; payloadType: number; channels: number };
  /**
   * The one address RTP may come from: onair's forwarding socket is bound to it. Anything else
   * that reaches the bridge's ports (another local process, another host) is dropped by ffmpeg.
   */
  from: string;
}

/** Only what a format parameter may hold goes into ffmpeg's description. */
const safeFmtp = (fmtp: string) => fmtp.replace(/[^A-Za-z0-9=;,+/._-]/g, "");

/** The address the bridge receives on, and describes in its SDP. */
export const BRIDGE_ADDRESS = "127.0.0.1";

/**
 * The SDP ffmpeg reads the forwarded RTP with (plain RTP on loopback, no encryption). Each
 * media has a source filter (RFC 4570): ffmpeg's RTP input passes it to the UDP socket as
 * `sources=`, which drops every packet from another address (RTP from
 * 127.0.0.9 once made a WHIP stream live with an injected picture).
 */
export function rtpInputSdp(input: RtpInput): string {
  const { video, audio, from } = input;
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(from)) throw new Error(`the RTP source filter needs an IPv4 address, got "${from}"`);
  const filter = `a=source-filter: incl IN IP4 ${BRIDGE_ADDRESS} ${from}`;
  const lines = ["v=0", `o=- 0 0 IN IP4 ${BRIDGE_ADDRESS}`, "s=onair WebRTC publish", `c=IN IP4 ${BRIDGE_ADDRESS}`, "t=0 0"];
  lines.push(`m=video ${video.port} RTP/AVP ${video.payloadType}`, filter, `a=rtpmap:${video.payloadType} H264/90000`);
  lines.push(`a=fmtp:${video.payloadType} ${video.fmtp ? safeFmtp(video.fmtp) : "packetization-mode=1"}`);
  if (audio) lines.push(`m=audio ${audio.port} RTP/AVP ${audio.payloadType}`, filter, `a=rtpmap:${audio.payloadType} opus/48000/${audio.channels === 1 ? 1 : 2}`);
  return lines.join("\n") + "\n";
}
