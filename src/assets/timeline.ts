// Wall clock → media: which segments a clip is cut from. Pure functions over playlist text.
//
// A copy can only start at a keyframe. Encoded renditions (a fixed GOP of one segment) and a
// passthrough source with a GOP within TARGETDURATION start every segment with one; a longer
// GOP is cut between keyframes (the packager keeps segments within TARGETDURATION). So a clip
// starts at the last segment at or before startTime that starts on a keyframe: at most one GOP
// longer than asked, never shorter.

export interface TimedSegment {
  uri: string;
  /** seconds */
  duration: number;
  /** Its init segment (EXT-X-MAP). */
  map: string;
  /** A seam (a pipeline restart or a reconnect) comes before it. */
  discontinuity: boolean;
  /** Wall-clock ms of its first sample (EXT-X-PROGRAM-DATE-TIME), when the playlist says. */
  programDateTime?: number;
}

/** A media playlist's segments with their EXT-X-PROGRAM-DATE-TIME, EXT-X-MAP and seams (pure). */
export function parseTimedPlaylist(text: string): TimedSegment[] {
  const segments: TimedSegment[] = [];
  let duration: number | undefined;
  let map: string | undefined;
  let pdt: number | undefined;
  let seam = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith("#EXTINF:")) duration = parseFloat(line.slice(8));
    else if (line.startsWith("#EXT-X-MAP:")) map = /URI="([^"]*)"/.exec(line)?.[1];
    else if (line.startsWith("#EXT-X-PROGRAM-DATE-TIME:")) {
      const t = Date.parse(line.slice(25));
      pdt = Number.isFinite(t) ? t : undefined;
    } else if (line === "#EXT-X-DISCONTINUITY") seam = true;
    else if (line !== "" && !line.startsWith("#") && duration !== undefined && map !== undefined) {
      segments.push({ uri: line, duration, map, discontinuity: seam, ...(pdt !== undefined ? { programDateTime: pdt } : {}) });
      duration = undefined;
      pdt = undefined;
      seam = false;
    }
  }
  return segments;
}

/**
 * Every segment's wall-clock start (pure). Segments the playlist dates keep their date; the
 * others are dated from their neighbours' (the one before plus its duration, or the one after
 * less their own); a playlist with no date at all starts at `fallbackStartMs`. Recordings'
 * playlists carry no dates: their segments are dated from the live playlist's where the two
 * share segments (`known`), else from the session's start.
 */
export function dateSegments(segments: TimedSegment[], fallbackStartMs: number, known: ReadonlyMap<string, number> = new Map()): Required<TimedSegment>[] {
  const dated = segments.map((s) => ({ ...s, programDateTime: s.programDateTime ?? known.get(s.uri) }));
  const first = dated.findIndex((s) => s.programDateTime !== undefined);
  if (first < 0) {
    let t = fallbackStartMs;
    return dated.map((s) => {
      const out = { ...s, programDateTime: t };
      t += s.duration * 1000;
      return out;
    });
  }
  for (let i = first - 1; i >= 0; i--) dated[i]!.programDateTime = dated[i + 1]!.programDateTime! - dated[i]!.duration * 1000;
  for (let i = first + 1; i < dated.length; i++) {
    if (dated[i]!.programDateTime === undefined) dated[i]!.programDateTime = dated[i - 1]!.programDateTime! + dated[i - 1]!.duration * 1000;
  }
  return dated as Required<TimedSegment>[];
}

/** What a list of dated segments covers, wall-clock ms; undefined when empty. */
export function coveredRange(segments: Required<TimedSegment>[]): { from: number; to: number } | undefined {
  if (segments.length === 0) return undefined;
  const last = segments[segments.length - 1]!;
  return { from: Math.round(segments[0]!.programDateTime), to: Math.round(last.programDateTime + last.duration * 1000) };
}

export interface ClipPlan {
  /** The segments to read, the first starting at a keyframe at or before startTime. */
  segments: Required<TimedSegment>[];
  /** How much media to copy from the first segment's start, seconds (to endTime). */
  durationSeconds: number;
}

export type PlanResult = { ok: true; plan: ClipPlan } | { ok: false; available: { from: number; to: number } | undefined };

/**
 * The segments that hold [startMs, endMs] (pure): from the last one starting on a keyframe
 * (`keyed`; every one when unsaid) at or before startMs to the one holding endMs. Not ok when
 * the range is not wholly inside what the segments cover; `available` says what is. A few ms
 * of slack at both ends: dates are rounded.
 */
export function planClip(segments: Required<TimedSegment>[], startMs: number, endMs: number, keyed: (s: Required<TimedSegment>) => boolean = () => true): PlanResult {
  const covered = coveredRange(segments);
  const SLACK_MS = 50;
  if (!covered || startMs < covered.from - SLACK_MS || endMs > covered.to + SLACK_MS) return { ok: false, available: covered };
  let first = 0;
  for (let i = 0; i < segments.length; i++) if (segments[i]!.programDateTime <= startMs + SLACK_MS) first = i;
  // None keyed before it (the window's oldest was cut between keyframes): the oldest, the best there is.
  while (first > 0 && !keyed(segments[first]!)) first--;
  let last = first;
  while (last < segments.length - 1 && segments[last]!.programDateTime + segments[last]!.duration * 1000 < endMs - SLACK_MS) last++;
  const chosen = segments.slice(first, last + 1);
  const start = chosen[0]!.programDateTime;
  const end = Math.min(endMs, chosen[chosen.length - 1]!.programDateTime + chosen[chosen.length - 1]!.duration * 1000);
  return { ok: true, plan: { segments: chosen, durationSeconds: Math.max(0.001, (end - start) / 1000) } };
}
