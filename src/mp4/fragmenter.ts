// How timed samples become fragments. Two policies over the same writer (fragment.ts):
// - one fragment per sample, for a reader that decodes (ffmpeg on a pipe): nothing waits.
// - LL-HLS parts, for the packager itself: a fragment holds about a part's worth of video and
//   the audio beside it, and a keyframe always opens a fragment, so parts that start with one
//   are independent and segments can be cut on them.
// Pure: samples in, bytes out, no clock.

import { fragment, type Mp4FragmentPart, type Mp4Sample } from "./fragment";

/** A sample as the muxer has timed it: its decode time in its track's timescale. */
export interface TimedSample {
  trackId: number;
  /** Decode time in the track's timescale; rises within a track. */
  at: number;
  data: Buffer;
  keyframe: boolean;
  compositionOffset: number;
}

export interface Fragmenter {
  /** A sample; returns the fragments it completes, in order. */
  add(sample: TimedSample): Buffer[];
  /** The stream ends: what is still held, as fragments. */
  flush(): Buffer[];
}

export interface FragmenterTrack {
  id: number;
  timescale: number;
  /** A first sample's duration, with no previous one to measure from (a frame; 1024 samples of AAC). */
  defaultDuration: number;
}

/**
 * One fragment per sample, written as it comes (a reader must not wait for the next sample).
 * Its duration is the time since the previous sample of its track: a decoder reading the pipe
 * times frames by their decode times, not by these.
 */
export class SampleFragmenter implements Fragmenter {
  private sequence = 0;
  private readonly last = new Map<number, number>();

  constructor(private readonly tracks: readonly FragmenterTrack[]) {}

  add(s: TimedSample): Buffer[] {
    const previous = this.last.get(s.trackId);
    const duration = previous === undefined ? trackOf(this.tracks, s.trackId).defaultDuration : s.at - previous;
    this.last.set(s.trackId, s.at);
    return [fragment(++this.sequence, [{ trackId: s.trackId, baseDecodeTime: s.at, samples: [toSample(s, duration)] }])];
  }

  flush(): Buffer[] {
    return [];
  }
}

interface Held {
  sample: TimedSample;
  /** Known once the next sample of its track comes (or at a cut, for audio: its nominal length). */
  duration: number | undefined;
}

/**
 * LL-HLS parts: video samples are held until the next one says how long they last; a part is
 * written when the next frame is a keyframe or the held frames span `partSeconds`, with every
 * audio sample that starts before the part's end. A stream without video (audio alone, or its
 * video stalled) is cut on audio the same way.
 */
export class PartFragmenter implements Fragmenter {
  private sequence = 0;
  private readonly held = new Map<number, Held[]>();
  /** Per track: the decode time its written samples end at, and the last one's duration as guessed. */
  private readonly written = new Map<number, { end: number; guessed: number }>();

  constructor(
    private readonly tracks: readonly FragmenterTrack[],
    private readonly videoTrack: number | undefined,
    private readonly partSeconds: number,
  ) {
    for (const t of tracks) this.held.set(t.id, []);
  }

  add(sample: TimedSample): Buffer[] {
    const track = trackOf(this.tracks, sample.trackId);
    const list = this.held.get(sample.trackId)!;
    const previous = list[list.length - 1];
    const s = { ...sample, at: this.placed(sample, previous) };
    if (previous) previous.duration = s.at - previous.sample.at;
    if (this.cutsBefore(s, track, list)) {
      const out = [this.cut(s.at / track.timescale)];
      list.push({ sample: s, duration: undefined });
      return out;
    }
    list.push({ sample: s, duration: undefined });
    return [];
  }

  /** Whether what is held is written as a part before `s`. */
  private cutsBefore(s: TimedSample, track: FragmenterTrack, list: readonly Held[]): boolean {
    const span = list.length > 0 ? (s.at - list[0]!.sample.at) / track.timescale : 0;
    if (s.trackId === this.videoTrack) {
      // A video keyframe always opens a part (and so can open a segment), even after audio alone
      // filled the one before it. Only video's: every AAC frame is a sync sample.
      if (s.keyframe && [...this.held.values()].some((l) => l.length > 0)) return true;
      return span >= this.partSeconds - 1e-6;
    }
    if (this.videoTrack === undefined) return span >= this.partSeconds - 1e-6;
    // Audio beside video: video cuts the parts, but when it stalls audio goes on filling them, so
    // players are not starved of sound. A frame still waiting for its successor gets half a
    // part's grace first; with none held, audio cuts at the part length.
    const videoHeld = this.held.get(this.videoTrack)!.length > 0;
    return span >= this.partSeconds * (videoHeld ? 1.5 : 1) - 1e-6;
  }

  /**
   * Where a sample goes on its track's timeline. A cut that took the sample before it without its
   * successor (audio at a part's end) had to guess that one's duration, and a publisher's
   * millisecond clock puts AAC frames 1008 or 1056 ticks apart at 48 kHz, not 1024: the next
   * fragment's tfdt would then miss where the last one ended, a gap or an overlap in the track.
   * A sample within half the guess of that end is moved onto it; further off (video that stalled)
   * the gap is real and it keeps its time. Never before what is already written.
   */
  private placed(s: TimedSample, previous: Held | undefined): number {
    if (previous) return Math.max(s.at, previous.sample.at + 1);
    const written = this.written.get(s.trackId);
    if (!written) return s.at;
    return s.at - written.end <= written.guessed / 2 ? written.end : s.at;
  }

  flush(): Buffer[] {
    const all = [...this.held.values()].some((l) => l.length > 0);
    return all ? [this.cut(Infinity)] : [];
  }

  /** Everything held that starts before `end` (seconds) as one fragment. */
  private cut(end: number): Buffer {
    const parts: Mp4FragmentPart[] = [];
    for (const track of this.tracks) {
      const list = this.held.get(track.id)!;
      let n = 0;
      while (n < list.length && list[n]!.sample.at / track.timescale < end) n++;
      if (n === 0) continue;
      const taken = list.splice(0, n);
      const samples = taken.map((h, i) => toSample(h.sample, h.duration ?? lastDuration(taken, i, track)));
      parts.push({ trackId: track.id, baseDecodeTime: taken[0]!.sample.at, samples });
      const last = samples[samples.length - 1]!;
      this.written.set(track.id, { end: taken[taken.length - 1]!.sample.at + last.duration, guessed: last.duration });
    }
    return fragment(++this.sequence, parts);
  }
}

/** A held sample whose successor has not come: as long as the one before it, or the track's default. */
function lastDuration(taken: readonly Held[], i: number, track: FragmenterTrack): number {
  const before = i > 0 ? taken[i - 1]!.duration : undefined;
  return before !== undefined && before > 0 ? before : track.defaultDuration;
}

function trackOf(tracks: readonly FragmenterTrack[], id: number): FragmenterTrack {
  const t = tracks.find((x) => x.id === id);
  if (!t) throw new RangeError(`a sample of track ${id}, which the fragmenter does not have`);
  return t;
}

function toSample(s: TimedSample, duration: number): Mp4Sample {
  return { duration, size: s.data.length, compositionOffset: s.compositionOffset, keyframe: s.keyframe, data: s.data };
}
