// HLS readers, each doing what a player does, and what they saw: dropped segments, stalls and the
// real-time rate of each stream.

import { parseMediaPlaylist } from "../../src/media/playlists";
import { hlsAgent, request } from "./httpClient";
import { now, pause, soakState } from "./runState";
import { publisherUpThroughout, type SoakStream } from "./streams";

/** A stream or reader without a new segment for longer than this many target durations stalled. */
export const STALL_TARGET_DURATIONS = 3;

export interface ReaderStats {
  playlistErrors: number;
  segments: number;
  bytes: number;
  segment404: number;
  segmentErrors: number;
  /** Segments that left the playlist between two polls before this reader saw them. */
  seqGaps: number;
  stalls: number;
  /** Longest time without a new segment while the publisher was connected, s. */
  longestWaitS: number;
  /** The playlist started over (a new session) or ended (#EXT-X-ENDLIST) under a live publisher. */
  resets: number;
  endedWhileLive: number;
}

export const newReaderStats = (): ReaderStats => ({
  playlistErrors: 0, segments: 0, bytes: 0, segment404: 0, segmentErrors: 0,
  seqGaps: 0, stalls: 0, longestWaitS: 0, resets: 0, endedWhileLive: 0,
});

/** What every reader of the run adds to: for the latency table and the timeline. */
export interface ReaderLog {
  /** Every reader's stall, with when it began. */
  stallStarts: number[];
  playlistLatencies: { at: number; ms: number }[];
  segmentLatencies: { at: number; ms: number }[];
}

export const newReaderLog = (): ReaderLog => ({ stallStarts: [], playlistLatencies: [], segmentLatencies: [] });

const targetDurationOf = (text: string) => Number(/^#EXT-X-TARGETDURATION:(\d+(?:\.\d+)?)/m.exec(text)?.[1]) || undefined;
const epochOf = (uri: string) => uri.replace(/_?\d+\.(ts|m4s)$/, "");

/** What one look at a stream's playlist adds to its record of arrivals (shared by its readers). */
function noteListing(s: SoakStream, segs: { uri: string; seq: number; duration: number }[], at: number): void {
  const newest = segs[segs.length - 1];
  if (!newest) return;
  const key = epochOf(newest.uri);
  let e = s.epochs.get(key);
  if (!e) {
    // The first look at this session: what is listed already is history, its times unknown.
    s.epochs.set(key, { maxSeq: newest.seq, arrivals: [{ seq: newest.seq, at, duration: 0 }] });
    return;
  }
  for (const seg of segs) {
    if (seg.seq <= e.maxSeq || epochOf(seg.uri) !== key) continue;
    if (seg.seq > e.maxSeq + 1) s.neverListed += seg.seq - e.maxSeq - 1;
    e.maxSeq = seg.seq;
    e.arrivals.push({ seq: seg.seq, at, duration: seg.duration });
  }
}

/**
 * One viewer of `s` until the readers are done: the master playlist once, then its media playlist
 * every half target duration and every new segment, read to the end.
 */
export async function runReader(baseUrl: string, s: SoakStream, stats: ReaderStats, log: ReaderLog, stallMsDefault: number): Promise<void> {
  const masterUrl = `${baseUrl}/hls/${s.playbackId}/index.m3u8`;
  let mediaUrl: string | undefined;
  let lastSeq = -1;
  let lastEpoch = "";
  let newestSeq = -1;
  let lastAdvance = now();
  let stalled = false;
  let pollMs = stallMsDefault / STALL_TARGET_DURATIONS / 2;
  let stallMs = stallMsDefault;
  const over = () => soakState.stopping || soakState.readersDone;
  // Readers join at different moments, as viewers do.
  await pause(Math.random() * pollMs, over);
  while (!over()) {
    const tick = now();
    try {
      if (!mediaUrl) {
        const master = await request(hlsAgent, masterUrl);
        const uri = master.status === 200 ? master.body.toString("utf8").split("\n").find((l) => l.trim() && !l.startsWith("#")) : undefined;
        if (!uri) stats.playlistErrors++;
        else mediaUrl = new URL(uri.trim(), masterUrl).toString();
      }
      if (mediaUrl) {
        const res = await request(hlsAgent, mediaUrl);
        log.playlistLatencies.push({ at: tick, ms: res.ms });
        if (res.status !== 200) stats.playlistErrors++;
        else {
          const text = res.body.toString("utf8");
          const td = targetDurationOf(text);
          if (td) {
            pollMs = (td * 1000) / 2;
            stallMs = td * 1000 * STALL_TARGET_DURATIONS;
          }
          const list = parseMediaPlaylist(text);
          const segs = list.segments;
          const newest = segs[segs.length - 1];
          if (list.ended && s.publisher?.isRunning && publisherUpThroughout(s, tick - stallMs, tick)) stats.endedWhileLive++;
          if (newest) {
            const epoch = epochOf(newest.uri);
            if (lastSeq >= 0 && (epoch !== lastEpoch || newest.seq < lastSeq)) {
              stats.resets++;
              lastSeq = -1;
            }
            lastEpoch = epoch;
            // A player starts near the live edge: the first look fetches the newest segment only.
            if (lastSeq < 0) lastSeq = newest.seq - 1;
            const fresh = segs.filter((x) => x.seq > lastSeq);
            if (fresh[0] && fresh[0].seq > lastSeq + 1) stats.seqGaps += fresh[0].seq - lastSeq - 1;
            noteListing(s, segs, tick);
            for (const seg of fresh) {
              if (over()) break;
              try {
                const got = await request(hlsAgent, new URL(seg.uri, mediaUrl).toString());
                log.segmentLatencies.push({ at: now(), ms: got.ms });
                if (got.status === 200) {
                  stats.segments++;
                  stats.bytes += got.body.length;
                } else if (got.status === 404) stats.segment404++;
                else stats.segmentErrors++;
              } catch {
                stats.segmentErrors++;
              }
              lastSeq = seg.seq;
            }
            if (newest.seq !== newestSeq) {
              const t = now();
              if (newest.seq > newestSeq && newestSeq >= 0 && publisherUpThroughout(s, lastAdvance, t)) {
                stats.longestWaitS = Math.max(stats.longestWaitS, (t - lastAdvance) / 1000);
              }
              newestSeq = newest.seq;
              lastAdvance = t;
              stalled = false;
            }
          }
        }
      }
    } catch {
      stats.playlistErrors++;
    }
    const t = now();
    // A stall: nothing new for 3 target durations while the publisher stayed connected.
    if (!stalled && t - lastAdvance > stallMs && s.publisher?.isRunning && publisherUpThroughout(s, lastAdvance, t)) {
      stalled = true;
      stats.stalls++;
      log.stallStarts.push(lastAdvance);
    }
    if (stalled && publisherUpThroughout(s, lastAdvance, t)) stats.longestWaitS = Math.max(stats.longestWaitS, (t - lastAdvance) / 1000);
    await pause(Math.max(0, tick + pollMs - now()), over);
  }
}

export interface StreamMedia {
  stalls: { at: number; seconds: number }[];
  maxGapS: number;
  /** Media seconds per wall second after the warm-up (1: real time). */
  rate: number | undefined;
  segments: number;
}

/** Stream stalls, longest gap and real-time rate, from the readers' shared record of arrivals. */
export function judgeStream(s: SoakStream, warmEnd: number, runEnd: number, stallMs: number): StreamMedia {
  const stalls: { at: number; seconds: number }[] = [];
  let maxGap = 0;
  let rate: number | undefined;
  let segments = 0;
  let longest = 0;
  const epochs = [...s.epochs.values()];
  for (const [i, e] of epochs.entries()) {
    const a = e.arrivals.filter((x) => x.at <= runEnd);
    segments += Math.max(0, a.length - 1);
    // Only the last session runs until the end of the soak; earlier ones ended with a disconnect.
    const times = [...a.map((x) => x.at), ...(i === epochs.length - 1 ? [runEnd] : [])];
    for (let k = 1; k < times.length; k++) {
      const from = times[k - 1]!;
      const to = times[k]!;
      if (!publisherUpThroughout(s, from, to)) continue;
      maxGap = Math.max(maxGap, (to - from) / 1000);
      if (to - from > stallMs) stalls.push({ at: from, seconds: (to - from) / 1000 });
    }
    const after = a.slice(1).filter((x) => x.at >= warmEnd);
    if (after.length > longest && after.length >= 3) {
      longest = after.length;
      const media = after.slice(1).reduce((sum, x) => sum + x.duration, 0);
      rate = media / ((after[after.length - 1]!.at - after[0]!.at) / 1000);
    }
  }
  return { stalls, maxGapS: maxGap, rate, segments };
}
