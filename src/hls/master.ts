// The master (multivariant) playlist: every rendition with what a player picks it by. Pure.

export interface Variant {
  uri: string;
  /** bits per second: the peak segment bitrate */
  bandwidth: number;
  /** bits per second: the average over the segments so far */
  averageBandwidth?: number;
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

/**
 * The master playlist listing every rendition, highest bandwidth first. `independentSegments`:
 * every segment of every rendition starts on a keyframe, so the master may say
 * EXT-X-INDEPENDENT-SEGMENTS (RFC 8216 §4.3.5.1); say false when one does not (a passthrough
 * source whose GOP outlasts TARGETDURATION is cut between keyframes).
 */
export function buildMasterPlaylist(variants: Variant[], { independentSegments = true }: { independentSegments?: boolean } = {}): string {
  const lines = ["#EXTM3U", "#EXT-X-VERSION:6", ...(independentSegments ? ["#EXT-X-INDEPENDENT-SEGMENTS"] : [])];
  for (const v of [...variants].sort((a, b) => b.bandwidth - a.bandwidth)) {
    const attrs = [`BANDWIDTH=${Math.round(v.bandwidth)}`];
    if (v.averageBandwidth) attrs.push(`AVERAGE-BANDWIDTH=${Math.round(v.averageBandwidth)}`);
    if (v.width && v.height) attrs.push(`RESOLUTION=${v.width}x${v.height}`);
    if (v.codecs && v.codecs.length) attrs.push(`CODECS="${v.codecs.join(",")}"`);
    if (v.frameRate) attrs.push(`FRAME-RATE=${v.frameRate.toFixed(3)}`);
    attrs.push(`NAME="${playlistName(v.name)}"`);
    lines.push(`#EXT-X-STREAM-INF:${attrs.join(",")}`, v.uri);
  }
  return lines.join("\n") + "\n";
}
