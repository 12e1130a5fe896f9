import type { UntrustedInput } from "../media";

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
  /** The address ffmpeg's RTP sockets bind (loopback): unreachable from any other host. */
  bindAddress: string;
}

/** WebRTC → RTMP: H.264 copied, Opus → AAC (the only transcode, about 1 % of a core). */
export function buildRtpBridgeArgs(o: RtpBridgeInput): string[] {
  return [
    ...COMMON,
    // The SDP file names udp/rtp inputs; nothing else may be opened through it, nor read as
    // anything but SDP.
    "-protocol_whitelist", "file,udp,rtp", "-format_whitelist", "sdp", "-f", "sdp",
    // Without it the sdp demuxer binds its RTP and RTCP sockets on 0.0.0.0 (ffmpeg 5.1's
    // sdp_read_header appends `localaddr` to each rtp:// url it opens; the c= line does not bind).
    "-localaddr", o.bindAddress,
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

export interface SrtListenerSettings {
  /** The address and port the listener binds. */
  host: string;
  port: number;
  /** The stream's SRT passphrase (10-79 characters): a caller without it fails the handshake. */
  passphrase: string;
  latencyMs: number;
}

/**
 * The listener's input (media/untrustedInput.ts): one caller, encrypted with the stream's
 * passphrase. The url names no secret; the passphrase and the rest are options of the open,
 * written to the 0600 script, never to argv.
 */
export function srtListenerInput(o: SrtListenerSettings): UntrustedInput {
  const host = o.host.includes(":") ? `[${o.host}]` : o.host;
  return {
    kind: "srt",
    url: `srt://${host}:${o.port}`,
    options: {
      mode: "listener",
      passphrase: o.passphrase,
      pbkeylen: "16",
      // libsrt's latency option is in microseconds.
      latency: String(o.latencyMs * 1000),
      // Two seconds of probing (the default is 5): the keyframe interval encoders are told to use.
      analyzeduration: "2000000",
    },
  };
}

/** Options before the script's `-i` (InputScripts.write's `before`): the outer open probes as briefly. */
export const SRT_INPUT_BEFORE = ["-analyzeduration", "2000000"] as const;

/** SRT (MPEG-TS, H.264 + AAC) → RTMP, copied. `input`: the options that read the listener's script. */
export function buildSrtBridgeArgs(o: { input: readonly string[]; outputUrl: string }): string[] {
  return [...COMMON, ...o.input, "-map", "0:v:0", "-map", "0:a:0?", "-c", "copy", "-f", "flv", o.outputUrl];
}
