// HLS playlist text, read and written as pure functions.

export interface MediaSegment {
  uri: string;
  /** seconds */
  duration: number;
  /** media sequence number */
  seq: number;
  /** An #EXT-X-DISCONTINUITY comes before it (a pipeline restart's seam). */
  discontinuity?: boolean;
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
  const segments: MediaSegment[] = [];
  let ended = false;
  for (const line of lines) {
    if (line.startsWith("#EXT-X-MEDIA-SEQUENCE:")) mediaSequence = Number(line.slice(22)) || 0;
    else if (line.startsWith("#EXTINF:")) pending = parseFloat(line.slice(8));
    else if (line === "#EXT-X-DISCONTINUITY") discontinuity = true;
    else if (line === "#EXT-X-ENDLIST") ended = true;
    else if (line && !line.startsWith("#") && pending !== undefined) {
      segments.push({ uri: line, duration: pending, seq: mediaSequence + segments.length, ...(discontinuity ? { discontinuity } : {}) });
      pending = undefined;
      discontinuity = false;
    }
  }
  return { mediaSequence, segments, ended };
}

/** A playlist that ends: players stop treating it as live (spec 3.1: no longer plays as live). */
export function withEndlist(text: string): string {
  if (/^#EXT-X-ENDLIST\s*$/m.test(text)) return text;
  return text.replace(/\s*$/, "\n") + "#EXT-X-ENDLIST\n";
}

export interface Variant {
  uri: string;
  /** bits per second: the peak segment bitrate */
  bandwidth: number;
  width?: number;
  height?: number;
  codecs?: string[];
  frameRate?: number;
  name: string;
}

/**
 * A NAME attribute's value: a quoted string may hold neither `"` nor a line break (RFC 8216
 * 4.2), so anything outside the profile-name alphabet becomes `_` (names stored before that
 * alphabet was enforced included).
 */
export const playlistName = (name: string) => name.replace(/[^A-Za-z0-9 _.-]/g, "_").slice(0, 64) || "_";

/** The master playlist listing every rendition, highest bandwidth first. */
export function buildMasterPlaylist(variants: Variant[]): string {
  const lines = ["#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-INDEPENDENT-SEGMENTS"];
  for (const v of [...variants].sort((a, b) => b.bandwidth - a.bandwidth)) {
    const attrs = [`BANDWIDTH=${Math.round(v.bandwidth)}`];
    if (v.width && v.height) attrs.push(`RESOLUTION=${v.width}x${v.height}`);
    if (v.codecs && v.codecs.length) attrs.push(`CODECS="${v.codecs.join(",")}"`);
    if (v.frameRate) attrs.push(`FRAME-RATE=${v.frameRate.toFixed(3)}`);
    attrs.push(`NAME="${playlistName(v.name)}"`);
    lines.push(`#EXT-X-STREAM-INF:${attrs.join(",")}`, v.uri);
  }
  return lines.join("\n") + "\n";
}
