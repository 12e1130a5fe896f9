import type { UntrustedInput } from "../../media";
import type { PullScheme } from "../../shapes";

// The ffmpeg of a pull: read the stream's source, republish it to the local RTMP server under a
// bridge ticket (as the WHIP and SRT bridges do). Video is copied (the ingest takes H.264, as
// from any publisher); audio is copied when it is AAC, else made AAC. The source itself is handed
// over as an untrusted input (media/untrustedInput.ts): a script of mode 0600 names the url and
// its options, so no password, signed query or header value is in ffmpeg's argv.

export interface PullArgsInput {
  scheme: PullScheme;
  /**
   * What ffmpeg opens: the source url (rtmp, rtmps, srt), onair's RTSP relay standing for it
   * (rtsp), or the source gateway's url (http, https).
   */
  url: string;
  /** `copy` while the source's audio is AAC or unknown; `aac` once it showed another codec. */
  audio: "copy" | "aac";
  /** AAC bitrate when audio is transcoded, bits per second. */
  audioBitrate: number;
  /** A source that sends nothing for this long ends the process (it is retried), ms. */
  ioTimeoutMs: number;
  /** rtmp://127.0.0.1:<port>/live/<ticket> */
  outputUrl: string;
}

/**
 * The source as ffmpeg's untrusted input, with the options before its `-i` (pure): which kind
 * (its demuxers and protocols), and how a dead source ends the process.
 */
export function pullInput(o: Pick<PullArgsInput, "scheme" | "url" | "ioTimeoutMs">): { input: UntrustedInput; before: string[] } {
  const us = String(o.ioTimeoutMs * 1000);
  switch (o.scheme) {
    case "rtmp":
    case "rtmps":
      // Live: read as it comes (no -re, which would only add delay to a live source).
      return { input: { kind: o.scheme, url: o.url, options: { rw_timeout: us } }, before: [] };
    case "rtsp":
      // Interleaved over the RTSP connection (UDP is lost behind NAT and firewalls, and could not
      // go through the relay); the RTSP demuxer's timeout is its socket I/O timeout.
      return { input: { kind: "rtsp", url: o.url, options: { rtsp_transport: "tcp", timeout: us } }, before: [] };
    case "srt":
      // SRT's own timeout (its reads never return EAGAIN, so rw_timeout never fires); MPEG-TS.
      return { input: { kind: "srt", url: o.url, options: { timeout: us } }, before: [] };
    case "http":
    case "https":
      // Through the source gateway (plain http on loopback). HLS (or a file over HTTP): ffmpeg
      // reads it as fast as it comes, so -re paces it; a live playlist would burst its first
      // segments. The HLS demuxer hands rw_timeout on to every playlist and segment it opens.
      return { input: { kind: "gateway", url: o.url, options: { rw_timeout: us } }, before: ["-re"] };
  }
}

/** ffmpeg pulling the input that `inputArgs` read (from its script) into the local RTMP server (pure). */
export function buildPullArgs(inputArgs: readonly string[], o: Pick<PullArgsInput, "audio" | "audioBitrate" | "outputUrl">): string[] {
  return [
    // info, not warning: the input's stream list (its audio codec) is read from stderr.
    "-hide_banner", "-nostdin", "-nostats", "-loglevel", "info",
    ...inputArgs,
    "-map", "0:v:0", "-map", "0:a:0?",
    "-c:v", "copy",
    ...(o.audio === "copy" ? ["-c:a", "copy"] : ["-c:a", "aac", "-b:a", String(o.audioBitrate), "-ar", "48000", "-ac", "2"]),
    "-f", "flv", o.outputUrl,
  ];
}

/**
 * The codec of the input's first audio stream, from ffmpeg's stderr at loglevel info (pure):
 * `  Stream #0:1: Audio: pcm_alaw, 8000 Hz, mono, s16, 64 kb/s` under `Input #0`. Undefined
 * when the lines show no audio input (yet). The output's list, which follows, is not read.
 */
export function inputAudioCodec(lines: readonly string[]): string | undefined {
  let inInput = false;
  for (const line of lines) {
    if (/^Input #0\b/.test(line)) inInput = true;
    else if (/^(Output #|Stream mapping:)/.test(line)) inInput = false;
    else if (inInput) {
      const m = /^\s+Stream #0:\d+.*?: Audio: ([A-Za-z0-9_]+)/.exec(line);
      if (m) return m[1];
    }
  }
  return undefined;
}

/**
 * A stderr line as the pull's logged tail keeps it (pure): an HLS pull prints `Opening '<url>'
 * for reading` for every playlist, segment and key, whose paths and queries are often signed
 * (tokens the source url's secrets do not cover): those lines are left out, and any other url
 * keeps its scheme and host only (`Error when loading first segment 'https://cdn.example/…'`).
 */
export function pullTailLine(line: string): string | undefined {
  if (/\bOpening '.*' for reading$/.test(line)) return undefined;
  return line.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^/\s'"]+)\/[^\s'"]*/gi, "$1/…");
}
