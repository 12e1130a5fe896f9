import type { Rendition } from "../shapes";

export interface LiveArgsInput {
  /** Where the pipeline pulls the published stream: the local RTMP server. */
  inputUrl: string;
  renditions: Rendition[];
  /** Seconds between keyframes (and so the segments' length) of encoded renditions. */
  segmentSeconds: number;
  /** Fragments (LL-HLS parts) of this many µs; undefined: one fragment per keyframe interval. */
  fragmentMicros?: number;
  audioBitrate: number;
  /** The ffmpeg has `-movflags cmaf` (see ffmpegHasCmaf); assumed when unsaid. */
  cmaf?: boolean;
}

/** Rendition i's fragmented MP4 goes to this fd: 3, 4, … (0-2 are stdin, the progress lines, the log). */
export const renditionFd = (r: Pick<Rendition, "index">) => 3 + r.index;

/**
 * One ffmpeg for a live session: decode once, `split` into the ladder (or copy the source),
 * each rendition written as fragmented MP4 (CMAF) to its own pipe for onair's packager.
 *
 * Timing, the same in every rendition (RFC 8216 §6.2.4): the source goes through one `fps`
 * at the ladder's highest rate before the split. That snaps RTMP's millisecond timestamps
 * onto an exact frame grid, so a half-rate rendition's `fps` keeps every other frame (evenly
 * spaced, no judder), and every rendition stamps the same picture with the same time (one
 * 90 kHz track timescale for all).
 */
export function buildLiveArgs(o: LiveArgsInput): string[] {
  // -progress: the output clock, twice a second, for the session's transcode speed.
  const args = ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "info", "-progress", "pipe:1"];
  // Half a second of probing: the ingest admits a publish once its audio (or the lack of it)
  // is known, so the streams are all there at once; the default 5 s would hold a video-only
  // stream back that long, and even with audio costs about 0.6 s of publish-to-playable.
  args.push("-analyzeduration", "500000");
  // A stalled local RTMP server must not leave the pipeline hanging forever (microseconds).
  args.push("-rw_timeout", "10000000", "-i", o.inputUrl);

  const encoded = o.renditions.filter((r) => r.encode);
  if (encoded.length > 0) {
    const top = Math.max(...encoded.map((r) => r.encode!.fps));
    const chains = encoded.map((r) => {
      const e = r.encode!;
      return (
        `[s${r.index}]${e.fps === top ? "" : `fps=${e.fps},`}scale=w=${e.width}:h=${e.height}:force_original_aspect_ratio=decrease,` +
        `pad=${e.width}:${e.height}:(ow-iw)/2:(oh-ih)/2,setsar=1[o${r.index}]`
      );
    });
    const split = `[0:v:0]fps=${top},split=${encoded.length}${encoded.map((r) => `[s${r.index}]`).join("")}`;
    args.push("-filter_complex", [split, ...chains].join(";"));
  }

  for (const r of o.renditions) {
    const e = r.encode;
    if (e) {
      args.push(
        "-map", `[o${r.index}]`, "-map", "0:a:0?",
        // zerolatency: no lookahead and no B-frames, so a frame leaves the encoder as it enters.
        "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
        "-b:v", String(e.bitrate), "-maxrate", String(e.bitrate), "-bufsize", String(e.bitrate * 2),
        // Keyframes exactly on segment boundaries, the same instants in every rendition, so
        // players can switch renditions at any segment.
        "-g", String(e.gopFrames), "-keyint_min", String(e.gopFrames), "-sc_threshold", "0",
        "-force_key_frames", `expr:gte(t,n_forced*${o.segmentSeconds})`,
        "-c:a", "aac", "-b:a", String(o.audioBitrate), "-ar", "48000", "-ac", "2",
      );
    } else {
      args.push("-map", "0:v:0", "-map", "0:a:0?", "-c", "copy");
    }
    args.push(
      "-video_track_timescale", "90000",
      "-f", "mp4",
      // empty_moov: the init segment first; default_base_moof: each fragment stands alone (a
      // part a player can fetch by itself); frag_keyframe: every keyframe starts a fragment.
      "-movflags", `+frag_keyframe+empty_moov+default_base_moof+skip_trailer${o.cmaf === false ? "" : "+cmaf"}`,
      ...(o.fragmentMicros ? ["-frag_duration", String(o.fragmentMicros)] : []),
      `pipe:${renditionFd(r)}`,
    );
  }
  return args;
}
