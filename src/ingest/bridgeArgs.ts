// The ffmpeg argument lists of the bridges that republish WebRTC and SRT publishers to the
// local RTMP server (bridges.ts): remux only, but WebRTC's Opus, which FLV cannot carry.

const COMMON = ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "warning"];

export interface RtpBridgeInput {
  /** The SDP file describing the forwarded RTP (sdp.ts rtpInputSdp). */
  sdpFile: string;
  /** rtmp://127.0.0.1:<port>/live/<ticket> */
  outputUrl: string;
  hasAudio: boolean;
  /** AAC bitrate for the Opus track, bits per second. */
  audioBitrate: number;
}

/** WebRTC → RTMP: H.264 copied, Opus → AAC (the only transcode, about 1 % of a core). */
export function buildRtpBridgeArgs(o: RtpBridgeInput): string[] {
  return [
    ...COMMON,
    // The SDP file names udp/rtp inputs; nothing else may be opened through it.
    "-protocol_whitelist", "file,udp,rtp",
    // RTP carries no decode timestamps of its own: FLV needs them.
    "-fflags", "+genpts",
    // Enough to see the first keyframe's parameters (a PLI asks for it at once).
    "-analyzeduration", "2000000", "-probesize", "5000000",
    "-i", o.sdpFile,
    "-map", "0:v:0", ...(o.hasAudio ? ["-map", "0:a:0"] : []),
    "-c:v", "copy",
    ...(o.hasAudio ? ["-c:a", "aac", "-b:a", String(o.audioBitrate), "-ar", "48000", "-ac", "2"] : []),
    "-f", "flv", o.outputUrl,
  ];
}

export interface SrtBridgeInput {
  /** The address and port the listener binds. */
  host: string;
  port: number;
  /** The stream's SRT passphrase (10-79 characters): a caller without it fails the handshake. */
  passphrase: string;
  latencyMs: number;
  outputUrl: string;
}

/** The listener's srt:// URL: one caller, encrypted with the stream's passphrase. */
export function srtListenerUrl(o: Pick<SrtBridgeInput, "host" | "port" | "passphrase" | "latencyMs">): string {
  const host = o.host.includes(":") ? `[${o.host}]` : o.host;
  const q = new URLSearchParams({ mode: "listener", passphrase: o.passphrase, pbkeylen: "16", latency: String(o.latencyMs * 1000) });
  return `srt://${host}:${o.port}?${q.toString()}`;
}

/** SRT (MPEG-TS, H.264 + AAC) → RTMP, copied. */
export function buildSrtBridgeArgs(o: SrtBridgeInput): string[] {
  return [
    ...COMMON,
    // Two seconds of probing (the default is 5): the keyframe interval encoders are told to use.
    "-analyzeduration", "2000000",
    "-f", "mpegts", "-i", srtListenerUrl(o),
    "-map", "0:v:0", "-map", "0:a:0?", "-c", "copy", "-f", "flv", o.outputUrl,
  ];
}
