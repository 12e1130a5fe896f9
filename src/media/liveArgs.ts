import path from "node:path";
import type { Rendition } from "../shapes";

export interface LiveArgsInput {
  /** Where the pipeline pulls the published stream: the local RTMP server. */
  inputUrl: string;
  /** `hls/<playbackId>`: rendition i goes to `<outDir>/<i>/`. */
  outDir: string;
  renditions: Rendition[];
  segmentSeconds: number;
  /** Segments kept in each live playlist; older ones are deleted from disk. */
  listSize: number;
  /** Prefix of segment file names, unique per session, so segment URLs never repeat. */
  segmentPrefix: string;
  audioBitrate: number;
  /**
   * A later run within the same session (a restart, a publisher's reconnect): continue the
   * existing playlists (sequence numbers go on, a discontinuity marks the seam) instead of
   * starting them over.
   */
  resume?: boolean;
}

export const variantDir = (outDir: string, r: Pick<Rendition, "index">) => path.join(outDir, String(r.index));
export const variantPlaylist = (outDir: string, r: Pick<Rendition, "index">) => path.join(variantDir(outDir, r), "index.m3u8");

/**
 * One ffmpeg for a live session: decode once, `split` into the ladder (or copy the source),
 * one HLS muxer per rendition. Separate outputs instead of `-var_stream_map` keep audio
 * optional (`0:a:0?`) and work on old ffmpeg builds that refuse `name:` in the map.
 */
export function buildLiveArgs(o: LiveArgsInput): string[] {
  // -progress: the output clock, twice a second, for the session's transcode speed.
  const args = ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "info", "-progress", "pipe:1"];
  // A stalled local RTMP server must not leave the pipeline hanging forever (microseconds).
  args.push("-rw_timeout", "10000000", "-i", o.inputUrl);

  const encoded = o.renditions.filter((r) => r.encode);
  if (encoded.length > 0) {
    const chains = encoded.map((r) => {
      const e = r.encode!;
      return (
        `[s${r.index}]fps=${e.fps},scale=w=${e.width}:h=${e.height}:force_original_aspect_ratio=decrease,` +
        `pad=${e.width}:${e.height}:(ow-iw)/2:(oh-ih)/2,setsar=1[o${r.index}]`
      );
    });
    const split = `[0:v:0]split=${encoded.length}${encoded.map((r) => `[s${r.index}]`).join("")}`;
    args.push("-filter_complex", [split, ...chains].join(";"));
  }

  for (const r of o.renditions) {
    const e = r.encode;
    if (e) {
      const seg = o.segmentSeconds;
      args.push(
        "-map", `[o${r.index}]`, "-map", "0:a:0?",
        "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
        "-b:v", String(e.bitrate), "-maxrate", String(e.bitrate), "-bufsize", String(e.bitrate * 2),
        // Keyframes exactly on segment boundaries, the same instants in every rendition, so
        // players can switch renditions at any segment.
        "-g", String(e.gopFrames), "-keyint_min", String(e.gopFrames), "-sc_threshold", "0",
        "-force_key_frames", `expr:gte(t,n_forced*${seg})`,
        "-c:a", "aac", "-b:a", String(o.audioBitrate), "-ar", "48000", "-ac", "2",
      );
    } else {
      args.push("-map", "0:v:0", "-map", "0:a:0?", "-c", "copy");
    }
    args.push(
      "-f", "hls",
      "-hls_time", String(o.segmentSeconds),
      "-hls_list_size", String(o.listSize),
      // RFC 8216 §6.2.2: a segment that left the playlist stays available for the playlist's
      // duration plus a segment, for players and caches a little behind.
      "-hls_delete_threshold", String(o.listSize + 1),
      // omit_endlist: a publisher that leaves does not end the playlists; the session ends
      // them when its reconnect window runs out, or another run continues them.
      "-hls_flags", `delete_segments+independent_segments+temp_file+omit_endlist${o.resume ? "+append_list" : ""}`,
      "-hls_segment_filename", path.join(variantDir(o.outDir, r), `${o.segmentPrefix}_%05d.ts`),
      variantPlaylist(o.outDir, r),
    );
  }
  return args;
}
