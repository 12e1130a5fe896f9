import type { Rendition } from "../shapes";
import { buildMasterPlaylist, type Variant } from "./master";
import { Fmp4Splitter } from "./boxes";
import { lastPartOf, renderMediaPlaylist, type RenditionReport } from "./playlist";
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
  /** A segment is complete; `retired` left the grace list (storage may delete them). */
  onSegment?(rendition: Rendition, segment: HlsSegment, retired: HlsSegment[]): void;
  /** Something operators should know (a part longer than the advertised PART-TARGET). */
  warn?(fields: object, message: string): void;
}

/** What a file name in a rendition's folder asks for. */
export type MediaFile = { bytes: Buffer; kind: "part" | "segment" | "init" };

/**
 * TARGETDURATION: encoded renditions cut on their fixed GOP, so segments are the target long;
 * a passthrough source cuts on its own keyframes (OBS: 2 s by default), a forced cut keeps
 * longer GOPs within it.
 */
export function targetDurationFor(renditions: Rendition[], segmentTarget: number): number {
  return renditions.every((r) => r.encode) ? Math.ceil(segmentTarget) : Math.max(4, Math.ceil(segmentTarget * 2));
}

/**
 * The longest part a rendition's frame rate makes: ffmpeg closes a fragment at the first frame
 * that reaches PART_SECONDS (24 fps: 5 frames, 0.208 s). Undefined for a passthrough source,
 * whose frame rate is the publisher's: measured on its first segment instead.
 */
export function nominalPartTarget(renditions: Rendition[]): number | undefined {
  if (!renditions.every((r) => r.encode)) return undefined;
  const longest = Math.max(...renditions.map((r) => Math.ceil(PART_SECONDS * r.encode!.fps - 1e-9) / r.encode!.fps));
  return roundUpMs(longest);
}

const roundUpMs = (s: number) => Math.ceil(s * 1000 - 1e-6) / 1000;

const FILE = /^(.+)_(?:(p)?(\d{1,12})\.m4s|init(\d{1,6})\.mp4)$/;

interface Waiter {
  ready: () => boolean;
  resolve: (ok: boolean) => void;
  timer: NodeJS.Timeout;
}

export class LivePackager {
  readonly tracks: RenditionTrack[];
  readonly targetDuration: number;
  private partTargetSeconds: number | undefined;
  private warnedLongPart = false;
  private readonly waiters: Waiter[][];
  private isEnded = false;

  constructor(readonly o: PackagerOptions) {
    this.targetDuration = targetDurationFor(o.renditions, o.segmentTarget);
    this.tracks = o.renditions.map(
      () =>
        new RenditionTrack({
          segmentTarget: o.segmentTarget,
          targetDuration: this.targetDuration,
          windowSegments: o.windowSegments,
          uriPrefix: o.uriPrefix,
          fixedGop: o.renditions.every((r) => r.encode),
        }),
    );
    this.waiters = o.renditions.map(() => []);
  }

  /** A run of ffmpeg: its pipes' bytes go in here, rendition by rendition. */
  startRun(): PackagerRun {
    const clock: RunClock = {};
    const splitters = this.o.renditions.map(() => new Fmp4Splitter());
    const segments = this.o.renditions.map(() => 0);
    let ended = false;
    return {
      get playable() {
        return segments.every((n) => n > 0);
      },
      push: (index, chunk, nowMs = Date.now()) => {
        if (ended || this.isEnded) return;
        const track = this.tracks[index]!;
        for (const piece of splitters[index]!.push(chunk)) {
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
        this.tracks.forEach((t, i) => {
          this.settle(i, t.endRun());
          this.notify(i);
        });
      },
    };
  }

  /** The session ended: every playlist gets its ENDLIST, and waiting requests are answered. */
  end(): void {
    if (this.isEnded) return;
    this.isEnded = true;
    this.tracks.forEach((t, i) => {
      this.settle(i, t.end());
      this.notify(i, true);
    });
  }

  get ended(): boolean {
    return this.isEnded;
  }

  /** PART-TARGET, once known (before the first segment of a passthrough source it is not). */
  get partTarget(): number | undefined {
    return this.partTargetSeconds ?? nominalPartTarget(this.o.renditions);
  }

  /** Every rendition has a complete segment: the master playlist can be handed out. */
  get playable(): boolean {
    return this.tracks.every((t) => t.lastCompleteMsn > 0) && this.partTarget !== undefined;
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

  master(): string | undefined {
    return this.playable ? buildMasterPlaylist(this.variants()) : undefined;
  }

  /** Rendition `index`'s live playlist; undefined before its first segment. */
  mediaPlaylist(index: number): string | undefined {
    const track = this.tracks[index];
    if (!track || (track.lastCompleteMsn === 0 && !track.ended)) return undefined;
    const partTarget = this.o.lowLatency ? this.partTarget : undefined;
    const reports: RenditionReport[] = [];
    this.tracks.forEach((other, j) => {
      const last = j === index ? undefined : lastPartOf(other);
      if (last) reports.push({ uri: `../${this.o.renditions[j]!.index}/index.m3u8`, ...last });
    });
    return renderMediaPlaylist(track, { targetDuration: this.targetDuration, ...(partTarget !== undefined ? { partTarget } : {}), reports });
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
  wait(index: number, ready: () => boolean, timeoutMs: number): Promise<boolean> {
    if (ready()) return Promise.resolve(true);
    if (this.isEnded || !this.waiters[index]) return Promise.resolve(false);
    return new Promise((resolve) => {
      const list = this.waiters[index]!;
      const waiter: Waiter = {
        ready,
        resolve,
        timer: setTimeout(() => {
          list.splice(list.indexOf(waiter), 1);
          resolve(false);
        }, timeoutMs),
      };
      list.push(waiter);
    });
  }

  /** Requests waiting now (for tests and metrics). */
  get waiting(): number {
    return this.waiters.reduce((n, l) => n + l.length, 0);
  }

  private settle(index: number, r: { closed?: HlsSegment; retired: HlsSegment[] }): void {
    if (!r.closed) return;
    if (this.partTargetSeconds === undefined && nominalPartTarget(this.o.renditions) === undefined) {
      // A passthrough source: PART-TARGET is its first segment's longest part, then fixed.
      this.partTargetSeconds = roundUpMs(Math.max(...r.closed.parts.map((p) => p.duration)));
    }
    this.o.onSegment?.(this.o.renditions[index]!, r.closed, r.retired);
  }

  private checkPart(duration: number): void {
    const target = this.partTarget;
    if (target === undefined || this.warnedLongPart || duration <= target + 1e-6) return;
    this.warnedLongPart = true;
    this.o.warn?.({ partSeconds: duration, partTarget: target }, "a part is longer than the playlist's PART-TARGET (players may stall): the source's frame timing is uneven");
  }

  private notify(index: number, ending = false): void {
    const list = this.waiters[index]!;
    for (const w of [...list]) {
      const ok = w.ready();
      if (!ok && !ending) continue;
      clearTimeout(w.timer);
      list.splice(list.indexOf(w), 1);
      w.resolve(ok);
    }
  }
}

export interface PackagerRun {
  /** Every rendition has a complete segment from this run. */
  readonly playable: boolean;
  /** Bytes from rendition `index`'s pipe; throws Fmp4Error/TrackError on a malformed stream. */
  push(index: number, chunk: Buffer, nowMs?: number): void;
  /** ffmpeg is gone: each rendition's open segment closes. */
  end(): void;
}
