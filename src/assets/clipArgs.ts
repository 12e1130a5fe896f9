// The clip's ffmpeg: one read of the chosen segments, two copies out (no decode, no encode).

export interface ClipArgsInput {
  /** A VOD playlist of the chosen segments, in the work folder beside them. */
  playlist: string;
  /** Media to copy from the first segment's start (a keyframe), seconds. */
  durationSeconds: number;
  /** The MP4 (written aside, renamed by the caller when ffmpeg succeeds). */
  mp4: string;
  /** The HLS rendition's folder: index.m3u8, init.mp4 and seg_<n>.m4s. */
  hlsDir: string;
  /** Segment length of the clip's HLS, seconds (cuts fall on the source's keyframes). */
  hlsSegmentSeconds: number;
}

/**
 * ffmpeg arguments for a clip (pure). `-t` on the input bounds both outputs alike; the MP4 has
 * its moov first (`+faststart`), so players start and seek before it has all arrived; the HLS
 * rendition is fragmented MP4 like the live one, cut at the same keyframes (`-c copy` cannot
 * cut elsewhere). `-progress` reports the output clock for the asset's progress.
 */
export function buildClipArgs(i: ClipArgsInput): string[] {
  const streams = ["-map", "0:v?", "-map", "0:a?", "-c", "copy"];
  return [
    "-hide_banner", "-nostdin", "-loglevel", "error",
    "-progress", "pipe:1", "-nostats",
    // The playlist and its segments are local files of our own making; nothing else is opened.
    "-protocol_whitelist", "file",
    "-t", i.durationSeconds.toFixed(3),
    "-i", i.playlist,
    ...streams, "-movflags", "+faststart", "-f", "mp4", "-y", i.mp4,
    ...streams,
    "-f", "hls", "-hls_time", String(i.hlsSegmentSeconds), "-hls_playlist_type", "vod", "-hls_list_size", "0",
    "-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4",
    "-hls_segment_filename", `${i.hlsDir}/seg_%03d.m4s`,
    "-y", `${i.hlsDir}/index.m3u8`,
  ];
}

/** A `-progress` line's output clock, seconds (pure); undefined for other lines. */
export function progressSeconds(line: string): number | undefined {
  const m = /^out_time_us=(\d+)\s*$/.exec(line);
  return m ? Number(m[1]) / 1e6 : undefined;
}
