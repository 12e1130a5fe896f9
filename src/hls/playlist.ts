import type { HlsMap, HlsPart, HlsSegment } from "./track";

// Live media playlists as text (RFC 8216bis with Apple's Low-Latency HLS): pure functions of a
// rendition's state. One playlist serves every player: those without low-latency support skip
// the part, hint and report tags and play the segments.

/** What a playlist is written from (a RenditionTrack is one). */
export interface PlaylistSource {
  readonly listed: readonly HlsSegment[];
  readonly openSegment: HlsSegment | undefined;
  readonly next: { msn: number; partUri: string };
  readonly mediaSequence: number;
  readonly discontinuitySequence: number;
  readonly ended: boolean;
  readonly currentMap: HlsMap | undefined;
}

/** The last part another rendition has: EXT-X-RENDITION-REPORT. */
export interface RenditionReport {
  uri: string;
  lastMsn: number;
  lastPart: number;
}

export interface MediaPlaylistOptions {
  targetDuration: number;
  /** PART-TARGET, seconds; undefined: plain HLS without parts. */
  partTarget?: number;
  reports?: RenditionReport[];
  /** EXT-X-SERVER-CONTROL (blocking reload): only where a server answers it; true when unsaid. */
  serverControl?: boolean;
  /**
   * Delta updates (RFC 8216bis §6.2.5.1): CAN-SKIP-UNTIL, seconds (at least six target durations).
   * Offered where the playlist is long (a DVR window); undefined: every reload is whole.
   */
  canSkipUntil?: number;
  /** This is a delta update (`_HLS_skip=YES`): the segments more than canSkipUntil from the end become one EXT-X-SKIP. */
  skip?: boolean;
}

/** The shortest CAN-SKIP-UNTIL a playlist may offer: six target durations (RFC 8216bis §4.4.3.8). */
export const canSkipUntilFor = (targetDuration: number) => targetDuration * 6;

/** The playlist without its offer of delta updates (for a playlist rewritten per viewer). */
export function withoutDeltaUpdates(playlist: string): string {
  return playlist.replace(/^(#EXT-X-SERVER-CONTROL:.*?),CAN-SKIP-UNTIL=[\d.]+/m, "$1");
}

/**
 * How many of the listed segments (from the oldest) a delta update replaces: those that end at
 * least `canSkipUntil` seconds before the last one ends (the Skip Boundary).
 */
export function skippedSegments(durations: readonly number[], canSkipUntil: number): number {
  let after = 0;
  for (let i = durations.length - 1; i >= 0; i--) {
    if (after >= canSkipUntil) return i + 1;
    after += durations[i]!;
  }
  return 0;
}

/** Complete segments whose parts are listed, before the open one (Apple: parts of the last few target durations). */
export const SEGMENTS_WITH_PARTS = 2;

/** Durations printed with the precision the timescale gives (ms would round 0.2002 down). */
const seconds = (s: number) => s.toFixed(5);

/**
 * PART-HOLD-BACK: three part targets, the least Apple allows (authoring spec 14.3); hls.js
 * and Safari sit this far behind the live edge.
 */
export const partHoldBack = (partTarget: number) => Math.round(partTarget * 3 * 1000) / 1000;

/**
 * A complete segment's lines without its parts (with or without the EXT-X-MAP before it): made
 * once per segment, which never changes once complete. A DVR playlist lists thousands, and is
 * rendered anew after every part; dates and durations as text were most of that cost.
 */
const completeSegmentTexts = new WeakMap<HlsSegment, [string?, string?]>();

function completeSegmentText(s: HlsSegment, withMap: boolean): string {
  let texts = completeSegmentTexts.get(s);
  if (!texts) completeSegmentTexts.set(s, (texts = []));
  const k = withMap ? 1 : 0;
  return (texts[k] ??= [
    ...(s.discontinuity ? ["#EXT-X-DISCONTINUITY"] : []),
    ...(withMap ? [`#EXT-X-MAP:URI="${s.map.uri}"`] : []),
    `#EXT-X-PROGRAM-DATE-TIME:${new Date(s.programDateTime).toISOString()}`,
    `#EXTINF:${seconds(s.duration)},`,
    s.uri,
  ].join("\n"));
}

export function renderMediaPlaylist(src: PlaylistSource, o: MediaPlaylistOptions): string {
  const ll = o.partTarget !== undefined;
  const lines = ["#EXTM3U", "#EXT-X-VERSION:9", `#EXT-X-TARGETDURATION:${o.targetDuration}`];
  const skipping = o.canSkipUntil !== undefined && o.serverControl !== false;
  const canSkip = skipping ? `,CAN-SKIP-UNTIL=${o.canSkipUntil}` : "";
  if (ll) {
    lines.push(`#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES${canSkip},PART-HOLD-BACK=${partHoldBack(o.partTarget!)}`);
    lines.push(`#EXT-X-PART-INF:PART-TARGET=${o.partTarget}`);
  } else if (o.serverControl !== false) {
    lines.push(`#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES${canSkip}`);
  }
  lines.push(`#EXT-X-MEDIA-SEQUENCE:${src.mediaSequence}`);
  if (src.discontinuitySequence > 0) lines.push(`#EXT-X-DISCONTINUITY-SEQUENCE:${src.discontinuitySequence}`);

  const listed = src.listed;
  let map: HlsMap | undefined;
  const head = (s: HlsSegment) => {
    if (s.discontinuity) lines.push("#EXT-X-DISCONTINUITY");
    if (s.map !== map) {
      map = s.map;
      lines.push(`#EXT-X-MAP:URI="${s.map.uri}"`);
    }
    lines.push(`#EXT-X-PROGRAM-DATE-TIME:${new Date(s.programDateTime).toISOString()}`);
  };
  const parts = (ps: readonly HlsPart[]) => {
    for (const p of ps) lines.push(`#EXT-X-PART:DURATION=${seconds(p.duration)},URI="${p.uri}"${p.independent ? ",INDEPENDENT=YES" : ""}`);
  };
  const skipped = skipping && o.skip && !src.ended ? skippedSegments(listed.map((s) => s.duration), o.canSkipUntil!) : 0;
  // The player keeps the skipped segments (and the tags before them) from its last full reload.
  if (skipped > 0) lines.push(`#EXT-X-SKIP:SKIPPED-SEGMENTS=${skipped}`);
  for (let i = skipped; i < listed.length; i++) {
    const s = listed[i]!;
    if (ll && i >= listed.length - SEGMENTS_WITH_PARTS) {
      head(s);
      parts(s.parts);
      lines.push(`#EXTINF:${seconds(s.duration)},`, s.uri);
    } else {
      lines.push(completeSegmentText(s, s.map !== map));
      map = s.map;
    }
  }
  if (src.ended) {
    lines.push("#EXT-X-ENDLIST");
    return lines.join("\n") + "\n";
  }
  if (ll) {
    const open = src.openSegment;
    if (open && open.parts.length > 0) {
      head(open);
      parts(open.parts);
    } else if (listed.length === 0 && src.currentMap) {
      lines.push(`#EXT-X-MAP:URI="${src.currentMap.uri}"`);
    }
    lines.push(`#EXT-X-PRELOAD-HINT:TYPE=PART,URI="${src.next.partUri}"`);
    for (const r of o.reports ?? []) lines.push(`#EXT-X-RENDITION-REPORT:URI="${r.uri}",LAST-MSN=${r.lastMsn},LAST-PART=${r.lastPart}`);
  }
  return lines.join("\n") + "\n";
}

/** The last part a rendition has, for the others' rendition reports; undefined before any. */
export function lastPartOf(src: Pick<PlaylistSource, "listed" | "openSegment">): { lastMsn: number; lastPart: number } | undefined {
  const open = src.openSegment;
  if (open && open.parts.length > 0) return { lastMsn: open.msn, lastPart: open.parts.length - 1 };
  const last = src.listed[src.listed.length - 1];
  return last ? { lastMsn: last.msn, lastPart: last.parts.length - 1 } : undefined;
}
