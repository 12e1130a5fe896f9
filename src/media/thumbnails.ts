// Thumbnails: a JPEG of the newest picture, for players' posters and listings (Livepeer's
// "Thumbnail (JPEG)" playback source). The live pipeline keeps one up to date from the decode it
// already does; a recording gets one from its MP4 when it is finalized.

/** The file's name beside a stream's playlists and a recording's files. */
export const THUMBNAIL_FILE = "thumbnail.jpg";

/**
 * One picture every this many seconds of media at most. 2 s is one default segment: a poster
 * is never older than a couple of segments, and a JPEG this often costs next to nothing.
 */
export const THUMBNAIL_SECONDS = 2;

/** Wide enough for a poster or a grid of streams; a smaller source is not enlarged. */
export const THUMBNAIL_WIDTH = 640;

/** mjpeg's quantizer (2 best … 31 worst): 5 is about 30-50 KiB at 640x360. */
const THUMBNAIL_QUALITY = 5;

/** Width at most THUMBNAIL_WIDTH, the source's aspect kept (an even height, which mjpeg's 4:2:0 needs). */
export const thumbnailScale = `scale=w='min(${THUMBNAIL_WIDTH},iw)':h=-2`;

/**
 * The encoder and muxer of a thumbnail output. One encoder thread: mjpeg's frame threads hold
 * each picture back until the next (measured: written 2 s late at one picture per 2 s).
 * `-update 1` rewrites one file rather than a numbered sequence; `-atomic_writing 1` makes
 * image2 write `<file>.tmp` and rename it over the file (checked with strace on Debian's 5.1
 * and the npm-shipped 2018 build), so a reader never sees half a JPEG.
 */
export function thumbnailOutputArgs(file: string): string[] {
  return ["-c:v", "mjpeg", "-q:v", String(THUMBNAIL_QUALITY), "-threads", "1", "-update", "1", "-atomic_writing", "1", "-f", "image2", file];
}

/**
 * One JPEG of a recorded file at `atSeconds` (pure). `-ss` before `-i` seeks by the MP4's index
 * to the keyframe before that instant: one GOP decoded, whatever the recording's length.
 */
export function buildStillArgs(o: { input: string; output: string; atSeconds: number }): string[] {
  return [
    // -y: a finalize job run again (after a crash) finds the still it made before.
    "-hide_banner", "-nostdin", "-nostats", "-loglevel", "error", "-y",
    "-ss", o.atSeconds.toFixed(3), "-i", o.input,
    "-map", "0:v:0", "-frames:v", "1", "-vf", thumbnailScale,
    ...thumbnailOutputArgs(o.output),
  ];
}

/** Where a recording's still is taken (pure): its middle, which says more about it than its first frame; 0 when unknown. */
export function stillAt(durationSeconds: number): number {
  return Number.isFinite(durationSeconds) && durationSeconds > 0 ? durationSeconds / 2 : 0;
}
