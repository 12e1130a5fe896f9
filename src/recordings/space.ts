import fs from "node:fs";

// Room for a recording's MP4: checked before the remux, which writes a file about as large as
// the recording's best rendition, on the disk live sessions write to.

const MiB = 1024 * 1024;

/**
 * Bytes the MP4 of a rendition needs (pure): its segments' size again (the MP4 of the same
 * media is a little smaller than its MPEG-TS: 98 % measured at 42 Mb/s 720p, less at lower
 * rates, where TS headers weigh more), plus 5 % and 1 MiB for the index (moov: about 0.5 KB
 * per second of media, under 2 % of the file even at 100 kb/s) and the file system's blocks.
 * A small recording still fits on a nearly full disk: that is when it matters most.
 */
export function mp4BytesNeeded(segmentBytes: number): number {
  return Math.ceil(segmentBytes * 1.05) + MiB;
}

/**
 * Why the MP4 does not fit, or undefined when it does (pure). `keepFree` is what live sessions
 * need left (STORAGE_MIN_FREE_MB): an MP4 that ate into it would end them.
 */
export function spaceShortfall(freeBytes: number, neededBytes: number, keepFree: number): string | undefined {
  if (freeBytes >= neededBytes + keepFree) return undefined;
  const mib = (n: number) => Math.ceil(n / MiB);
  return `not enough free space for the MP4: it needs about ${mib(neededBytes)} MiB and ${mib(keepFree)} MiB must stay free for live sessions (STORAGE_MIN_FREE_MB), but only ${mib(freeBytes)} MiB are free`;
}

/** Free space for an unprivileged writer on the file system holding `dir`. */
export function freeBytesAt(dir: string): number {
  const st = fs.statfsSync(dir);
  return st.bavail * st.bsize;
}

/** An error of a write that found the disk full. */
export const isNoSpace = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code === "ENOSPC";

/** ffmpeg's words for a write that found the disk full. */
export const saysNoSpace = (lines: string[]) => lines.some((l) => /no space left on device/i.test(l));
