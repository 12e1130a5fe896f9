// ffmpeg argument lists for multistream pushes, as pure functions.

import type { Writable } from "node:stream";
import { parseTargetUrl, type TargetUrl } from "./targetUrl";

/**
 * The published stream as a source push reads it: FLV written into its ffmpeg's stdin by the
 * ingest as it arrives, with no network hop and no local url for another user to play.
 */
export interface PushSource {
  /** The stream's internal name (its id, never its key): in logs and for tests. */
  name: string;
  /**
   * Starts writing the stream into `into`: the codecs' headers and the newest group of
   * pictures first, then every message; `into` is ended when the publish ends (or, if it has
   * not come, after a while). Returns what stops the writing.
   */
  feed(into: Writable): () => void;
}

/** Where a push reads the media it sends. */
export type PushInput =
  /** The published stream, copied as it arrives (on the push's stdin). */
  | ({ kind: "source" } & PushSource)
  /** One rendition's live HLS playlist, as the session's pipeline writes it (already encoded). */
  | { kind: "rendition"; playlist: string };

/** Where a push's ffmpeg writes. */
export type PushOutput =
  /**
   * FLV into a local socket onair reads: onair publishes it over RTMP(S) with its own client,
   * so the destination's url (its stream key) never appears in ffmpeg's argv.
   */
  | { kind: "relay"; socketPath: string }
  /**
   * ffmpeg connects to the destination itself: srt:// (Node speaks no SRT), and rtmp urls with
   * `user:password@` (Adobe's and Limelight's RTMP authentication, which only ffmpeg speaks).
   * The url, secrets and all, is in ffmpeg's argv (docs/architecture.md#multistream-references).
   */
  | {
      kind: "direct";
      /** The target's url: rtmp://, rtmps:// or srt://, parsed again here; ffmpeg gets its canonical form. */
      destination: string;
      /**
       * rtmps: verify the destination's certificate (default true). ffmpeg's tls protocol does not
       * unless told to (`-tls_verify 1`); its OpenSSL builds also need the CA file named.
       */
      tlsVerify?: boolean;
      /** The system's CA bundle (Debian: /etc/ssl/certs/ca-certificates.crt), when it has one. */
      caFile?: string;
    };

export interface PushArgsInput {
  input: PushInput;
  output: PushOutput;
  videoOnly: boolean;
}

/**
 * How long a read or a write may block, in microseconds (ffmpeg's `-rw_timeout`). On the
 * output it bounds the RTMP handshake with a host that accepts TCP but never answers, and a
 * destination that stops reading mid-stream; without it ffmpeg waits for ever.
 */
export const PUSH_IO_TIMEOUT_US = 10_000_000;

/** The container a destination takes: FLV over RTMP(S), MPEG-TS over SRT. */
export function destinationMuxer(url: string): "flv" | "mpegts" | undefined {
  const scheme = url.slice(0, Math.max(0, url.indexOf(":"))).toLowerCase();
  if (scheme === "rtmp" || scheme === "rtmps") return "flv";
  if (scheme === "srt") return "mpegts";
  return undefined;
}

/** Whether onair publishes to this destination itself (rtmp, rtmps) rather than ffmpeg (srt, rtmp with credentials). */
export function relayedByOnair(url: TargetUrl): boolean {
  return (url.scheme === "rtmp" || url.scheme === "rtmps") && url.userinfo === undefined;
}

/**
 * One push: copy (never re-encode) the source or an already encoded rendition to a destination.
 *
 * A rendition is read from the live HLS the pipeline writes, so the session's single transcode
 * serves playback and every rendition push alike (no second decode). The hls demuxer follows a
 * live playlist by itself (it reloads it and waits for new segments; `m3u8_hold_counters`
 * bounds the wait at 1000 reloads); `-live_start_index -1` starts at the newest complete
 * segment instead of three segments back; `-re` sends at the media's own pace, as a camera
 * would, instead of one segment's worth in a burst every segment period. It ends by itself
 * at `#EXT-X-ENDLIST`, when the session ends. Every segment starts with a keyframe and carries a
 * PMT, so half a second of probing finds both streams; ffmpeg's default 5 s would wait for the
 * next segment before sending anything (measured: connected 1.2 s later with 1 s segments).
 *
 * A relayed push writes FLV to a unix socket onair listens on (`unix:`; a pipe from the
 * supervisor could not be paused when the destination is slow). A direct push reports progress
 * on stdout as key=value blocks (`-progress pipe:1`, every 0.5 s): it is connected once a block
 * reports media written (see `progressShowsMedia`).
 */
export function buildPushArgs(o: PushArgsInput): string[] {
  const out = o.output;
  const common = ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "warning"];
  if (out.kind === "relay") {
    // A live stream: no seeking back to patch duration and size into the header.
    return [...common, ...inputArgs(o), "-f", "flv", "-flvflags", "no_duration_filesize", `unix:${out.socketPath}`];
  }
  const parsed = parseTargetUrl(out.destination);
  if (!parsed.ok) throw new Error(`a multistream destination must be a valid rtmp://, rtmps:// or srt:// url: it ${parsed.error}`);
  const destination = parsed.url;
  const args = [...common, "-progress", "pipe:1", ...inputArgs(o)];
  if (destinationMuxer(destination.canonical) === "flv") args.push("-f", "flv", "-flvflags", "no_duration_filesize");
  else args.push("-f", "mpegts");
  // Output options reach the protocols that open the url: rtmps hands these to its tls layer.
  if (destination.scheme === "rtmps" && out.tlsVerify !== false) {
    args.push("-tls_verify", "1");
    if (out.caFile) args.push("-ca_file", out.caFile);
  }
  // The canonical url, last: whatever follows the host is the stream's name (rtmp) or a checked
  // option (srt), never an ffmpeg option of ours.
  args.push("-rw_timeout", String(PUSH_IO_TIMEOUT_US), destination.canonical);
  return args;
}

/** The input and what of it is copied. */
function inputArgs(o: PushArgsInput): string[] {
  const args: string[] = [];
  if (o.input.kind === "source") {
    // The ingest writes the publish into ffmpeg's stdin, and ends it when the publish ends (or
    // stalls: its media timeout), which ends the push like a file's end.
    args.push("-f", "flv", "-i", "pipe:0");
  } else {
    args.push("-re", "-live_start_index", "-1", "-analyzeduration", "500000", "-i", o.input.playlist);
  }
  args.push("-map", "0:v:0");
  if (o.videoOnly) args.push("-an");
  else args.push("-map", "0:a:0?");
  args.push("-c", "copy");
  return args;
}

/**
 * Whether one line of `-progress` output shows media written to the destination. ffmpeg opens
 * an RTMP output (handshake, connect, publish, and the server's NetStream.Publish.Start) or an
 * SRT caller connection before it writes anything, and reports `out_time_us=0` once the header
 * is out; `out_time_us` above 0 means packets of media went out on an accepted connection.
 */
export function progressShowsMedia(line: string): boolean {
  const m = /^out_time_us=(\d+)$/.exec(line.trim());
  return m !== null && Number(m[1]) > 0;
}
