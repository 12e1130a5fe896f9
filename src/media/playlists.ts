// HLS playlist text, read and written as pure functions.

export interface MediaSegment {
  uri: string;
  /** seconds */
  duration: number;
  /** media sequence number */
  seq: number;
  /** An #EXT-X-DISCONTINUITY comes before it (a pipeline restart's seam). */
  discontinuity?: boolean;
  /** The EXT-X-MAP (init segment) URI it needs, for fragmented MP4. */
  map?: string;
}

export interface MediaPlaylist {
  mediaSequence: number;
  segments: MediaSegment[];
  ended: boolean;
}

export function parseMediaPlaylist(text: string): MediaPlaylist {
  const lines = text.split(/\r?\n/).map((l) => l.trim());
  let mediaSequence = 0;
  let pending: number | undefined;
  let discontinuity = false;
  let map: string | undefined;
  const segments: MediaSegment[] = [];
  let ended = false;
  for (const line of lines) {
    if (line.startsWith("#EXT-X-MEDIA-SEQUENCE:")) mediaSequence = Number(line.slice(22)) || 0;
    else if (line.startsWith("#EXTINF:")) pending = parseFloat(line.slice(8));
    else if (line === "#EXT-X-DISCONTINUITY") discontinuity = true;
    else if (line.startsWith("#EXT-X-MAP:")) map = /URI="([^"]*)"/.exec(line)?.[1];
    else if (line === "#EXT-X-ENDLIST") ended = true;
    else if (line && !line.startsWith("#") && pending !== undefined) {
      segments.push({ uri: line, duration: pending, seq: mediaSequence + segments.length, ...(discontinuity ? { discontinuity } : {}), ...(map ? { map } : {}) });
      pending = undefined;
      discontinuity = false;
    }
  }
  return { mediaSequence, segments, ended };
}

/** A playlist that ends: players stop treating it as live (docs/api.md#spec-31-stream-activity: no longer plays as live). */
export function withEndlist(text: string): string {
  if (/^#EXT-X-ENDLIST\s*$/m.test(text)) return text;
  return text.replace(/\s*$/, "\n") + "#EXT-X-ENDLIST\n";
}

// The master playlist is the packager's (src/hls); recordings write one too.
export { buildMasterPlaylist, playlistName, type Variant } from "../hls";
