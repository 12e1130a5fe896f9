import { REFUSED_PHRASE } from "../../outbound";
import type { PullScheme } from "../../shapes";

// The ffmpeg argument list of a pull: read the stream's source, republish it to the local RTMP
// server under a bridge ticket (as the WHIP and SRT bridges do). Video is copied (the ingest
// takes H.264, as from any publisher); audio is copied when it is AAC, else made AAC.

export interface PullArgsInput {
  /** The source url as stored (parsePullSource passed it). */
  source: string;
  scheme: PullScheme;
  /** HTTP(S) only: request headers (HLS playlists and segments alike). */
  headers?: Record<string, string>;
  /**
   * HTTP(S) only, and required there: the local forward proxy (`http://127.0.0.1:<port>`) every
   * request goes through, so the outbound policy sees each host a redirect or playlist names.
   */
  httpProxy?: string;
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
 * The protocols ffmpeg may open for each kind of source: what the source url (or, for HLS, its
 * playlists) names can reach nothing else (a playlist listing `file:` segments, say).
 */
const PROTOCOLS: Record<PullScheme, string> = {
  rtmp: "rtmp,tcp",
  rtmps: "rtmps,tcp,tls",
  rtsp: "rtsp,rtp,tcp,udp",
  srt: "srt,udp",
  // crypto: AES-128 HLS segments. httpproxy: https through the forward proxy (CONNECT).
  http: "http,https,tcp,tls,crypto,httpproxy",
  https: "http,https,tcp,tls,crypto,httpproxy",
};

/** The input options of a source: how a dead source ends the process, and how it is read. */
function inputOptions(o: PullArgsInput): string[] {
  const us = String(o.ioTimeoutMs * 1000);
  switch (o.scheme) {
    case "rtmp":
    case "rtmps":
      // Live: read as it comes (no -re, which would only add delay to a live source).
      return ["-rw_timeout", us];
    case "rtsp":
      // Interleaved over the RTSP connection: UDP is lost behind NAT and firewalls, and on loss.
      // The RTSP demuxer's -timeout is its socket I/O timeout.
      return ["-rtsp_transport", "tcp", "-timeout", us];
    case "srt":
      // SRT's own timeout (its reads never return EAGAIN, so -rw_timeout never fires); MPEG-TS.
      return ["-timeout", us, "-f", "mpegts"];
    case "http":
    case "https": {
      // HLS (or a file over HTTP): ffmpeg reads it as fast as the server gives it, so -re paces
      // it at its own speed; a live playlist would otherwise burst its first segments.
      const headers = Object.entries(o.headers ?? {});
      // ffmpeg would otherwise follow redirects and playlists to any host, resolving each anew;
      // the HLS demuxer hands http_proxy (and the headers) on to every playlist, segment and key.
      if (!o.httpProxy) throw new Error("an http(s) pull needs the forward proxy");
      return [
        "-rw_timeout", us,
        "-http_proxy", o.httpProxy,
        ...(headers.length > 0 ? ["-headers", headers.map(([k, v]) => `${k}: ${v}\r\n`).join("")] : []),
        "-re",
      ];
    }
  }
}

/** ffmpeg pulling `source` into the local RTMP server (pure). */
export function buildPullArgs(o: PullArgsInput): string[] {
  return [
    // info, not warning: the input's stream list (its audio codec) is read from stderr.
    "-hide_banner", "-nostdin", "-nostats", "-loglevel", "info",
    "-protocol_whitelist", PROTOCOLS[o.scheme],
    ...inputOptions(o),
    "-i", o.source,
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

/**
 * What the outbound policy refused, from a line of ffmpeg's stderr (pure): the host a redirect
 * or playlist led to, from `HTTP error 403 Refused by the outbound policy: <host>` (the forward
 * proxy's answer), or a playlist naming an `httpproxy:` url. That one ffmpeg opens itself, a
 * plain TCP connection to the host it names (the protocol is whitelisted for https through the
 * proxy, and the HLS demuxer takes any protocol whose name starts with "http"): the pull stops
 * at once.
 */
export function policyRefusal(line: string): { what: string; stop: boolean } | undefined {
  const phrase = `HTTP error 403 ${REFUSED_PHRASE}: `;
  const at = line.indexOf(phrase);
  if (at >= 0) return { what: line.slice(at + phrase.length).trim() || "a host", stop: false };
  if (/\bOpening '(?:crypto\+)?httpproxy:/i.test(line)) return { what: "an httpproxy: url", stop: true };
  return undefined;
}
