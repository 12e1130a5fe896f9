import zlib from "node:zlib";
import type { Rendition } from "../shapes";
import { buildMasterPlaylist, type Variant } from "./master";
import { Fmp4Splitter } from "./boxes";
import { canSkipUntilFor, lastPartOf, renderMediaPlaylist, type RenditionReport } from "./playlist";
import { RenditionTrack, type HlsSegment, type RunClock } from "./track";

// A live session's HLS, from the fragmented MP4 its ffmpeg writes (one pipe per rendition) to
// the playlists, parts and segments players fetch, all answered from memory. It outlives a run
// of ffmpeg: a restart or a reconnect continues the same playlists after a discontinuity, with
// media sequence numbers that only grow.

/** Parts of about this long: ffmpeg's -frag_duration (µs) makes them. */
export const PART_SECONDS = 0.2;

export interface PackagerOptions {
  renditions: Rendition[];
  /** Parts, blocking reload and preload hints (LL-HLS); false: segments only. */
  lowLatency: boolean;
  /** Seconds: segments close at the first keyframe past this. */
  segmentTarget: number;
  /** Complete segments each playlist lists. */
  windowSegments: number;
  /** Unique per session: no URL of one session names media of another. */
  uriPrefix: string;
  /** The audio bit rate the ladder encodes, for BANDWIDTH before anything is measured. */
  audioBitrate: number;
  /** The first media sequence number (see firstMsnFor); 1 when unsaid. */
  firstMsn?: number;
  /** Live DVR: playlists list this many seconds back, and offer delta updates; 0 or unsaid: off. */
  dvrSeconds?: number;
  /**
   * ffmpeg cuts fragments on an exact part grid (`-movflags cmaf`); false: an old ffmpeg whose
   * first part runs up to a frame long, so PART-TARGET gets a frame of room.
   */
  exactParts?: boolean;
  /** A segment is complete; `retired` left the grace list (storage may delete them). */
  onSegment?(rendition: Rendition, segment: HlsSegment, retired: HlsSegment[]): void;
  /** Something operators should know (a part longer than the advertised PART-TARGET). */
  warn?(fields: object, message: string): void;
}

/** What a file name in a rendition's folder asks for. */
export type MediaFile = { bytes: Buffer; kind: "part" | "segment" | "init" };

/**
 * TARGETDURATION: encoded renditions cut on their fixed GOP, so segments are the target long.
 * A passthrough source cuts on its own keyframes: 2 s is what OBS and the hosted services ask
 * of broadcasters (and what the stream's health asks for); a longer GOP is cut without a
 * keyframe to stay within it.
 */
export const PASSTHROUGH_KEYFRAME_SECONDS = 2;

export function targetDurationFor(renditions: Rendition[], segmentTarget: number): number {
  const target = Math.ceil(segmentTarget);
  return renditions.every((r) => r.encode) ? target : Math.max(PASSTHROUGH_KEYFRAME_SECONDS, target);
}

/**
 * The longest part a rendition's frame rate makes: ffmpeg closes a fragment at the first frame
 * that reaches PART_SECONDS (24 fps: 5 frames, 0.208 s). Undefined for a passthrough source,
 * whose frame rate is the publisher's: measured on its first segment instead.
 */
export function nominalPartTarget(renditions: Rendition[], exactParts = true): number | undefined {
  if (!renditions.every((r) => r.encode)) return undefined;
  const frames = (fps: number) => Math.ceil(PART_SECONDS * fps - 1e-9) + (exactParts ? 0 : 1);
  const longest = Math.max(...renditions.map((r) => frames(r.encode!.fps) / r.encode!.fps));
  return roundUpMs(longest);
}

/**
 * PART-TARGET of a passthrough source, from its first segment's parts. A publisher's clock counts
 * milliseconds (FLV), so parts of the same frames measure 0.200 or 0.201 s by rounding alone: the
 * longest one seen gets that millisecond of room, or a later part would pass it by one.
 */
export function measuredPartTarget(partSeconds: readonly number[]): number {
  return roundUpMs(Math.max(...partSeconds) + SOURCE_CLOCK_SECONDS);
}

/** The publisher's timestamps' unit (FLV, E-RTMP without nanosecond offsets). */
const SOURCE_CLOCK_SECONDS = 0.001;

/**
 * A session's first media sequence number: the wall clock in seconds, so that a later session
 * of the stream (the same playback URL) numbers on from where an earlier one stopped, and a
 * response a cache kept from an earlier session cannot pass for this one's.
 */
export const firstMsnFor = (startedAtMs: number) => Math.max(1, Math.floor(startedAtMs / 1000));

const roundUpMs = (s: number) => Math.ceil(s * 1000 - 1e-6) / 1000;

/** Segments of two renditions starting this close (ms) start on the same keyframe instant: under a frame at 30 fps, over a clock's rounding. */
const ALIGNMENT_TOLERANCE_MS = 20;

/**
 * An encoder's own ladder may announce a track that never sends a frame (a rung its encoder
 * failed to start): once the top rendition has this many complete segments, the stream goes live
 * without the renditions that have none, and the master lists only those that have media.
 */
export const SILENT_RENDITION_SEGMENTS = 3;

/** Whether a run's renditions, by complete segments each, can be handed out: all, or the top one long enough alone. */
export function renditionsPlayable(segments: readonly number[]): boolean {
  const top = segments[0] ?? 0;
  return top > 0 && (top >= SILENT_RENDITION_SEGMENTS || segments.every((n) => n > 0));
}

const FILE = /^(.+)_(?:(p)?(\d{1,12})\.m4s|init(\d{1,6})\.mp4)$/;

interface Rendered {
  version: number;
  text: string;
  gzip?: Buffer;
}

interface Waiter {
  ready: () => boolean;
  resolve: (ok: boolean) => void;
  /** What it is answered, once it is due. */
  outcome?: boolean;
  timer: NodeJS.Timeout;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export class LivePackager {
  readonly tracks: RenditionTrack[];
  readonly targetDuration: number;
  /** PART-TARGET: known from the ladder, or (passthrough) measured on the first segment. */
  private partTargetSeconds: number | undefined;
  private warnedLongPart = false;
  /** Per rendition: a Set, so answering or abandoning one is O(1) (an array's indexOf + splice made releasing N of them O(N²)). */
  private readonly waiters: Set<Waiter>[];
  private isEnded = false;
  private isAnnounced = false;
  private run: { ended: boolean; end(): void } | undefined;
  /** Bumped on every change: a rendered playlist is good while it stands. */
  private version = 0;
  /** Per rendition, the whole playlist and the delta update (`_HLS_skip`), each made once per change. */
  private readonly rendered: { whole?: Rendered; delta?: Rendered }[];
  /** Complete segments each playlist lists: the setting, and never under three target durations (RFC 8216 §6.2.2). */
  readonly windowSegments: number;

  constructor(readonly o: PackagerOptions) {
    this.targetDuration = targetDurationFor(o.renditions, o.segmentTarget);
    this.windowSegments = Math.max(o.windowSegments, Math.ceil((3 * this.targetDuration) / o.segmentTarget));
    this.tracks = o.renditions.map(
      () =>
        new RenditionTrack({
          segmentTarget: o.segmentTarget,
          targetDuration: this.targetDuration,
          windowSegments: this.windowSegments,
          uriPrefix: o.uriPrefix,
          fixedGop: o.renditions.every((r) => r.encode),
          ...(o.firstMsn !== undefined ? { firstMsn: o.firstMsn } : {}),
          ...(o.dvrSeconds ? { dvrSeconds: o.dvrSeconds } : {}),
        }),
    );
    this.waiters = o.renditions.map(() => new Set());
    this.rendered = o.renditions.map(() => ({}));
    this.partTargetSeconds = nominalPartTarget(o.renditions, o.exactParts !== false);
  }

  /** A run of ffmpeg: its pipes' bytes go in here, rendition by rendition. */
  startRun(): PackagerRun {
    // Runs never overlap: whatever an earlier run still sends is not this run's media.
    this.run?.end();
    const clock: RunClock = {};
    const splitters = this.o.renditions.map(() => new Fmp4Splitter());
    const segments = this.o.renditions.map(() => 0);
    let ended = false;
    const run: PackagerRun = {
      get ended() {
        return ended;
      },
      get playable() {
        return renditionsPlayable(segments);
      },
      push: (index, chunk, nowMs = Date.now()) => {
        if (ended || this.isEnded) return;
        const track = this.tracks[index]!;
        const pieces = splitters[index]!.push(chunk);
        // Most pipe chunks complete no fragment: nothing changed, nobody waiting can be answered.
        if (pieces.length === 0) return;
        this.version++;
        for (const piece of pieces) {
          if (piece.kind === "init") {
            this.settle(index, track.endRun());
            track.newInit(piece.bytes, clock);
          } else {
            const r = track.addFragment(piece.bytes, nowMs);
            this.checkPart(r.part.duration);
            if (r.closed) segments[index]!++;
            this.settle(index, r);
          }
        }
        this.notify(index);
      },
      end: () => {
        if (ended) return;
        ended = true;
        this.version++;
        this.tracks.forEach((t, i) => {
          this.settle(i, t.endRun());
          this.notify(i);
        });
      },
    };
    this.run = run;
    return run;
  }

  /** The session ended: every playlist gets its ENDLIST, and waiting requests are answered. */
  end(): void {
    if (this.isEnded) return;
    this.run?.end();
    this.isEnded = true;
    this.version++;
    this.tracks.forEach((t, i) => {
      this.settle(i, t.end());
      this.notify(i, true);
    });
  }

  get ended(): boolean {
    return this.isEnded;
  }

  /** DVR: every rendition lists `seconds` back (at most the session's window); see RenditionTrack.setDvrWindow. */
  setDvrWindow(seconds: number): void {
    for (const t of this.tracks) t.setDvrWindow(seconds);
  }

  /**
   * DVR: the window in force and the seconds listed (the top rendition's), and the bytes a
   * second of the session takes in storage (every rendition's average so far).
   */
  get dvrFootprint(): { window: number; listed: number; bytesPerSecond: number } {
    const bytesPerSecond = this.tracks.reduce((sum, t) => sum + t.bandwidth.average / 8, 0);
    return { ...this.tracks[0]!.dvrSpan, bytesPerSecond };
  }

  /** PART-TARGET, once known (before the first segment of a passthrough source it is not). */
  get partTarget(): number | undefined {
    return this.partTargetSeconds;
  }

  /** Every rendition has a complete segment (or the top one has enough alone): the master playlist can be handed out. */
  get playable(): boolean {
    return renditionsPlayable(this.tracks.map((t) => t.completeSegments)) && this.partTarget !== undefined;
  }

  /** Every segment of every rendition so far starts on a keyframe (EXT-X-INDEPENDENT-SEGMENTS holds). */
  get everySegmentStartsOnKeyframe(): boolean {
    return this.tracks.every((t) => t.everySegmentStartsOnKeyframe);
  }

  /** Each rendition's measured bandwidth and codecs, for the master playlist (and the recording's). */
  variants(): Variant[] {
    const audio = this.o.audioBitrate;
    return this.o.renditions.map((r, i) => {
      const t = this.tracks[i]!;
      const e = r.encode;
      const map = t.currentMap;
      const hasAudio = map?.tracks.some((x) => x.handler === "soun") ?? false;
      const nominal = e ? e.bitrate + (hasAudio ? audio : 0) : 0;
      const { peak, average } = t.bandwidth;
      const video = map?.tracks.find((x) => x.handler === "vide");
      return {
        uri: `${r.index}/index.m3u8`,
        name: r.name,
        // RFC 8216 §4.3.4.2: BANDWIDTH is at least the peak segment bit rate.
        bandwidth: Math.max(nominal, Math.ceil(peak)) || 1,
        averageBandwidth: Math.ceil(average) || nominal || undefined,
        width: e?.width ?? video?.width,
        height: e?.height ?? video?.height,
        frameRate: e?.fps,
        codecs: map?.codecs ?? [],
      };
    });
  }

  /**
   * Renditions whose newest segment in common with the first (by media sequence number) starts
   * at another instant: their keyframes are not the first's. An encoded ladder is aligned by
   * construction; an encoder's own (multitrack) may not be, and players switching between such
   * renditions land on a keyframe that is not there.
   */
  unalignedRenditions(): number[] {
    const top = this.tracks[0];
    if (!top || this.tracks.length < 2) return [];
    const out: number[] = [];
    this.tracks.forEach((t, i) => {
      if (i === 0) return;
      const msn = Math.min(t.lastCompleteMsn, top.lastCompleteMsn);
      const mine = t.segment(msn);
      const theirs = top.segment(msn);
      if (!mine || !theirs || mine.discontinuity !== theirs.discontinuity) return;
      if (Math.abs(mine.programDateTime - theirs.programDateTime) > ALIGNMENT_TOLERANCE_MS) out.push(i);
    });
    return out;
  }

  /** Renditions with no media while the top one went live without them (see SILENT_RENDITION_SEGMENTS). */
  silentRenditions(): number[] {
    if ((this.tracks[0]?.completeSegments ?? 0) < SILENT_RENDITION_SEGMENTS) return [];
    return this.tracks.flatMap((t, i) => (t.completeSegments === 0 ? [i] : []));
  }

  master(): string | undefined {
    if (!this.playable) return undefined;
    // Claimed while it holds: a long-GOP passthrough source is force-cut at its first segment's
    // end, before the master is first handed out, so it never shows the tag.
    const withMedia = this.variants().filter((_, i) => this.tracks[i]!.lastCompleteMsn > 0);
    return buildMasterPlaylist(withMedia, { independentSegments: this.everySegmentStartsOnKeyframe });
  }

  /**
   * The session has gone live (isActive and stream.started are committed): players may be
   * handed the master playlist. Before, the playback URL does not work, as the API says
   * (`isActive` false), however playable the renditions already are.
   */
  announce(): void {
    this.isAnnounced = true;
  }

  /** The master playlist for players: once announced. */
  announcedMaster(): string | undefined {
    return this.isAnnounced ? this.master() : undefined;
  }

  /** CAN-SKIP-UNTIL: offered with a DVR window, whose playlists are long enough for delta updates to matter. */
  get canSkipUntil(): number | undefined {
    return this.o.dvrSeconds ? canSkipUntilFor(this.targetDuration) : undefined;
  }

  /**
   * Rendition `index`'s live playlist (and its gzip, made once per change however many players
   * ask); undefined before its first segment. `skip`: the delta update, where one is offered.
   */
  mediaPlaylistWithGzip(index: number, skip = false): { text: string; gzip: Buffer } | undefined {
    const kind = skip && this.canSkipUntil !== undefined ? "delta" : "whole";
    const cached = this.rendered[index]?.[kind];
    if (cached?.version === this.version && cached.gzip) return { text: cached.text, gzip: cached.gzip };
    const text = this.mediaPlaylist(index, skip);
    if (text === undefined) return undefined;
    const gzip = zlib.gzipSync(text, { level: 1 });
    this.rendered[index]![kind] = { version: this.version, text, gzip };
    return { text, gzip };
  }

  /** Rendition `index`'s live playlist (`skip`: the delta update, where one is offered); undefined before its first segment. */
  mediaPlaylist(index: number, skip = false): string | undefined {
    const track = this.tracks[index];
    if (!track || (track.lastCompleteMsn === 0 && !track.ended)) return undefined;
    const canSkipUntil = this.canSkipUntil;
    const kind = skip && canSkipUntil !== undefined ? "delta" : "whole";
    const cached = this.rendered[index]![kind];
    if (cached?.version === this.version) return cached.text;
    const partTarget = this.o.lowLatency ? this.partTarget : undefined;
    const reports: RenditionReport[] = [];
    this.tracks.forEach((other, j) => {
      const last = j === index ? undefined : lastPartOf(other);
      if (last) reports.push({ uri: `../${this.o.renditions[j]!.index}/index.m3u8`, ...last });
    });
    const text = renderMediaPlaylist(track, {
      targetDuration: this.targetDuration,
      ...(partTarget !== undefined ? { partTarget } : {}),
      ...(canSkipUntil !== undefined ? { canSkipUntil, skip: kind === "delta" } : {}),
      reports,
    });
    this.rendered[index]![kind] = { version: this.version, text };
    return text;
  }

  /** A part, segment or init of rendition `index` by its file name, while it is served. */
  file(index: number, name: string): MediaFile | undefined {
    const track = this.tracks[index];
    const m = FILE.exec(name);
    if (!track || !m || m[1] !== this.o.uriPrefix) return undefined;
    if (m[4] !== undefined) {
      const map = track.mapById(Number(m[4]));
      return map && { bytes: map.bytes, kind: "init" };
    }
    if (m[2]) {
      const part = track.part(Number(m[3]));
      return part && { bytes: part.bytes, kind: "part" };
    }
    const segment = track.segment(Number(m[3]));
    return segment?.bytes && { bytes: segment.bytes, kind: "segment" };
  }

  /** The part id a file name names, when it is a part of this session (a preload hint's). */
  partId(name: string): number | undefined {
    const m = FILE.exec(name);
    return m && m[1] === this.o.uriPrefix && m[2] ? Number(m[3]) : undefined;
  }

  /**
   * Resolves true as soon as `ready()` holds for rendition `index` (checked on each new part),
   * false after `timeoutMs` or when the session ends without it.
   */
  wait(index: number, ready: () => boolean, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (ready()) return Promise.resolve(true);
    if (this.isEnded || !this.waiters[index] || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const list = this.waiters[index]!;
      const waiter: Waiter = {
        ready,
        resolve,
        timer: setTimeout(() => this.release(list, waiter, false), timeoutMs),
      };
      // The player went away: nothing to answer, nothing to keep.
      if (signal) {
        waiter.signal = signal;
        waiter.onAbort = () => this.release(list, waiter, false);
        signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
      list.add(waiter);
    });
  }

  private release(list: Set<Waiter>, w: Waiter, ok: boolean): void {
    if (this.detach(list, w)) w.resolve(ok);
  }

  /** Out of the list, its timer and abort listener gone: nothing but its answer left. */
  private detach(list: Set<Waiter>, w: Waiter): boolean {
    if (!list.delete(w)) return false;
    clearTimeout(w.timer);
    if (w.onAbort) w.signal?.removeEventListener("abort", w.onAbort);
    return true;
  }

  /** Requests waiting now (for tests and metrics). */
  get waiting(): number {
    return this.waiters.reduce((n, l) => n + l.size, 0);
  }

  private settle(index: number, r: { closed?: HlsSegment; retired: HlsSegment[] }): void {
    if (!r.closed) return;
    if (this.partTargetSeconds === undefined) {
      // A passthrough source: PART-TARGET comes from its first segment's parts, then is fixed.
      this.partTargetSeconds = measuredPartTarget(r.closed.parts.map((p) => p.duration));
    }
    this.o.onSegment?.(this.o.renditions[index]!, r.closed, r.retired);
  }

  private checkPart(duration: number): void {
    if (!this.o.lowLatency) return;
    const target = this.partTarget;
    if (target === undefined || this.warnedLongPart || duration <= target + 1e-6) return;
    this.warnedLongPart = true;
    this.o.warn?.({ partSeconds: duration, partTarget: target }, "a part is longer than the playlist's PART-TARGET (players may stall): the source's frame timing is uneven");
  }

  private notify(index: number, ending = false): void {
    const list = this.waiters[index]!;
    if (list.size === 0) return;
    const due: Waiter[] = [];
    // Deleting the entry being visited is safe in a Set's iteration: one pass, no copy.
    for (const w of list) {
      const ok = w.ready();
      if ((ok || ending) && this.detach(list, w)) {
        w.outcome = ok;
        due.push(w);
      }
    }
    answerInTurns(due, 0);
  }
}

/**
 * Requests answered per turn of the event loop: each answer writes a response, and 2,000 written
 * in one turn held a loaded node's loop for a second (its health probe with it).
 */
const ANSWERS_PER_TURN = 100;

function answerInTurns(due: Waiter[], from: number): void {
  const end = Math.min(due.length, from + ANSWERS_PER_TURN);
  for (let i = from; i < end; i++) due[i]!.resolve(due[i]!.outcome === true);
  if (end < due.length) setImmediate(answerInTurns, due, end);
}

export interface PackagerRun {
  /** Ended: by ffmpeg's exit, or by the next run starting. */
  readonly ended: boolean;
  /** Every rendition has a complete segment from this run. */
  readonly playable: boolean;
  /** Bytes from rendition `index`'s pipe; throws Fmp4Error/TrackError on a malformed stream. */
  push(index: number, chunk: Buffer, nowMs?: number): void;
  /** ffmpeg is gone: each rendition's open segment closes. */
  end(): void;
}
