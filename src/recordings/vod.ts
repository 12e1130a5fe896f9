// Recording playlists and the MP4 remux: pure functions.

export interface RecordedSegment {
  uri: string;
  /** seconds */
  duration: number;
  /** The first segment after a pipeline restart: timestamps and encoder state start anew. */
  discontinuity?: boolean;
  /** Its init segment (EXT-X-MAP), for fragmented MP4. */
  map?: string;
}

/**
 * A recording's media playlist. While the session is live it is an EVENT playlist that only
 * grows; once finalized it is a VOD playlist with its end (a player can seek all of it).
 */
export function buildVodPlaylist(segments: RecordedSegment[], ended: boolean): string {
  const target = Math.max(1, Math.ceil(Math.max(0, ...segments.map((s) => s.duration))));
  const lines = [
    "#EXTM3U",
    "#EXT-X-VERSION:6",
    `#EXT-X-TARGETDURATION:${target}`,
    "#EXT-X-MEDIA-SEQUENCE:0",
    `#EXT-X-PLAYLIST-TYPE:${ended ? "VOD" : "EVENT"}`,
    "#EXT-X-INDEPENDENT-SEGMENTS",
  ];
  let map: string | undefined;
  for (const s of segments) {
    if (s.discontinuity) lines.push("#EXT-X-DISCONTINUITY");
    if (s.map && s.map !== map) lines.push(`#EXT-X-MAP:URI="${s.map}"`);
    map = s.map;
    lines.push(`#EXTINF:${s.duration.toFixed(6)},`, s.uri);
  }
  if (ended) lines.push("#EXT-X-ENDLIST");
  return lines.join("\n") + "\n";
}

/** The rendition to make the MP4 of: the one with the highest measured bandwidth. */
export function bestRendition<R extends { bandwidth: number }>(recorded: R[]): R | undefined {
  return recorded.reduce<R | undefined>((best, r) => (!best || r.bandwidth > best.bandwidth ? r : best), undefined);
}

/** A segment uri the recorder writes: a plain file name in the rendition's folder, nothing else. */
export const isSegmentFileName = (uri: string) => /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/.test(uri);

/**
 * HLS → MP4 without re-encoding (`-c copy`), the moov atom first (`+faststart`) so players can
 * start and seek before the whole file has arrived. Written aside, renamed when complete.
 */
export function buildMp4RemuxArgs(playlist: string, output: string): string[] {
  return [
    "-hide_banner", "-nostdin", "-loglevel", "error",
    // The playlist and its segments are local files; nothing in them may open anything else.
    "-protocol_whitelist", "file",
    "-i", playlist,
    "-map", "0:v?", "-map", "0:a?", "-c", "copy",
    // ADTS AAC in TS becomes MP4's raw AAC (older ffmpeg builds do not insert it themselves).
    "-bsf:a", "aac_adtstoasc",
    "-movflags", "+faststart",
    // Twice a second, the output clock and bytes: what the remux's watchdog reads.
    "-progress", "pipe:1", "-nostats",
    "-f", "mp4", "-y", output,
  ];
}
