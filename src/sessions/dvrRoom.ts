// How long each live DVR window on a node can be with the disk it has. Pure: the node's DVR
// keeper (dvrSpace.ts) measures the sessions and the free space, this shares the room out.

/** One live DVR session as storage sees it. */
export interface DvrNeed {
  /** The window the stream asked for (s). */
  asked: number;
  /** Seconds its playlists list now. */
  listed: number;
  /** Storage a second of the session takes, every rendition together. */
  bytesPerSecond: number;
}

/**
 * The window each session can keep (whole seconds, same order) when storage can still give
 * DVR `roomBytes` (its free space beyond what live sessions must keep): every window that fits
 * is kept whole; the rest share the room so that each gets the same seconds beyond what it
 * lists now (one heavy ladder does not take every other stream's window); with less than no
 * room, they give back the same seconds each, down to nothing.
 */
export function planDvrWindows(needs: readonly DvrNeed[], roomBytes: number): number[] {
  const missing = (n: DvrNeed) => Math.max(0, n.asked - n.listed) * n.bytesPerSecond;
  if (needs.reduce((sum, n) => sum + missing(n), 0) <= roomBytes) return needs.map((n) => n.asked);
  const windows = needs.map((n) => n.asked);
  // Water-filling: sessions whose whole window costs less than the common share keep it, and
  // what they leave is shared by the others, until no more are settled.
  let open = needs.map((_, i) => i).filter((i) => needs[i]!.bytesPerSecond > 0);
  let left = roomBytes;
  for (;;) {
    const rate = open.reduce((sum, i) => sum + needs[i]!.bytesPerSecond, 0);
    const each = rate > 0 ? left / rate : 0;
    const settled = open.filter((i) => needs[i]!.asked - needs[i]!.listed <= each);
    if (settled.length === 0 || each <= 0) {
      for (const i of open) windows[i] = Math.max(0, Math.min(needs[i]!.asked, Math.floor(needs[i]!.listed + each)));
      return windows;
    }
    for (const i of settled) left -= missing(needs[i]!);
    open = open.filter((i) => !settled.includes(i));
  }
}

const mib = (bytes: number) => Math.max(0, Math.floor(bytes / (1024 * 1024)));

/** What a stream's `issues` say while its window is shorter than asked (pure). */
export function dvrCutIssue(kept: number, asked: number, freeBytes: number, keptFreeBytes: number): string {
  return `DVR window cut to ${kept} s of the ${asked} s asked: the data directory has ${mib(freeBytes)} MiB free and keeps ${mib(keptFreeBytes)} MiB for live sessions (STORAGE_MIN_FREE_MB and a margin); free disk space or lower dvrWindow`;
}
