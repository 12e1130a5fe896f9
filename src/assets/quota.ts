// What a clip may cost before it is cut, and where "up to now" ends. Pure functions: the service
// feeds them the database's counts, the disk's free space and the source's sizes.

const MiB = 1024 * 1024;
const mib = (bytes: number) => Math.ceil(bytes / MiB);

/**
 * How far past now an endTime is still read as "up to now". A player's "clip the last 30 s"
 * sends endTime = its clock's now; the newest complete segment ends a segment and the
 * pipeline's delay (0.5 to 3 s) before that, and a client's clock may run a few seconds fast.
 * Further ahead is a mistake, refused.
 */
export const CLIP_END_AHEAD_MS = 10_000;

/**
 * The end a clip is cut to (pure): none asked, the newest media (at most `maxMs` after the
 * start); asked past the newest media but no more than CLIP_END_AHEAD_MS past now, the newest
 * media; otherwise what was asked (the caller checks that it is there). Undefined when
 * there is no media after the start to cut.
 */
export function clipEnd(startTime: number, asked: number | undefined, newest: number | undefined, nowMs: number, maxMs: number): number | undefined {
  if (asked !== undefined && (newest === undefined || asked <= newest || asked > nowMs + CLIP_END_AHEAD_MS)) return asked;
  if (newest === undefined || !Number.isFinite(newest) || newest <= startTime) return undefined;
  return asked === undefined ? Math.min(newest, startTime + maxMs) : newest;
}

/** The newest media any source holds, wall-clock ms (pure); undefined when none holds any. */
export function newestMedia(available: { to: number }[]): number | undefined {
  return available.length === 0 ? undefined : Math.max(...available.map((a) => a.to));
}

/**
 * Bit rate assumed for a source whose size is not known at all (a recording in the bucket of a
 * session that counted no bytes): a high 1080p rate, so that the estimate errs on the large side.
 */
export const UNKNOWN_SOURCE_BITS_PER_SECOND = 8_000_000;

/**
 * Bytes a clip's MP4 will take (pure): a copy, so its source's bytes over the range. `segments`:
 * the bytes and seconds of the segments it is cut from, when they are on this disk; else the
 * session's own rate (every rendition's bytes over the source's seconds: high for a ladder,
 * never low); else UNKNOWN_SOURCE_BITS_PER_SECOND. Plus 1 % and 64 KiB for the MP4's index.
 */
export function estimateClipBytes(
  durationSeconds: number,
  segments: { bytes: number; seconds: number } | undefined,
  session: { sourceBytes: number; transcodedBytes: number; sourceSegmentsDuration: number },
): number {
  let bytesPerSecond = UNKNOWN_SOURCE_BITS_PER_SECOND / 8;
  if (segments && segments.seconds > 0) bytesPerSecond = segments.bytes / segments.seconds;
  else if (session.sourceSegmentsDuration > 0 && session.sourceBytes + session.transcodedBytes > 0) {
    bytesPerSecond = (session.sourceBytes + session.transcodedBytes) / session.sourceSegmentsDuration;
  }
  return Math.ceil(bytesPerSecond * durationSeconds * 1.01) + 64 * 1024;
}

export interface ClipCaps {
  /** MAX_ASSETS_PER_USER */
  maxAssets: number;
  /** MAX_CLIP_MB_PER_USER, in bytes */
  maxBytes: number;
}

/** Why one more clip of `estimate` bytes passes the user's caps, or undefined when it does not (pure). */
export function capRefusal(usage: { count: number; bytes: number }, estimate: number, caps: ClipCaps): string | undefined {
  if (usage.count + 1 > caps.maxAssets) {
    return `at most ${caps.maxAssets} assets per user (MAX_ASSETS_PER_USER); this user has ${usage.count}: delete some first`;
  }
  if (usage.bytes + estimate > caps.maxBytes) {
    return `at most ${mib(caps.maxBytes)} MiB of clips per user (MAX_CLIP_MB_PER_USER); this user's hold ${mib(usage.bytes)} MiB and this clip needs about ${mib(estimate)} MiB: delete some first`;
  }
  return undefined;
}

/**
 * Disk a cut writes, for `estimate` bytes of MP4 (pure): the MP4 and its HLS copy, about as
 * large. The source segments are hard links: they cost nothing.
 */
export const cutBytesNeeded = (estimate: number) => 2 * estimate;

/**
 * Why a cut writing `needed` bytes does not fit, or undefined when it does (pure): live
 * sessions end below `keepFree` (STORAGE_MIN_FREE_MB), and a clip must not take that room.
 */
export function freeSpaceRefusal(freeBytes: number, needed: number, keepFree: number): string | undefined {
  if (freeBytes - needed >= keepFree) return undefined;
  return `not enough free space for the clip: it needs about ${mib(needed)} MiB and ${mib(keepFree)} MiB must stay free for live sessions (STORAGE_MIN_FREE_MB), but only ${mib(freeBytes)} MiB are free; try again later`;
}
