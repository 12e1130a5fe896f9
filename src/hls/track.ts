import { parseFragment, parseInit, type InitTrack } from "./boxes";

// One rendition's live HLS state: the fragments ffmpeg writes become parts, parts become
// segments, and the window of segments a playlist lists is kept here, in memory. Pure: bytes
// and a clock in, state out; the packager serves it and writes it to storage.

export interface TrackOptions {
  /** A segment closes at the first independent part once it is this long (seconds). */
  segmentTarget: number;
  /**
   * EXT-X-TARGETDURATION, constant for the session (RFC 8216 §4.3.3.1): a segment that would
   * grow past it closes at a part boundary even without a keyframe (a passthrough source with
   * long GOPs).
   */
  targetDuration: number;
  /** Complete segments a playlist lists. */
  windowSegments: number;
  /**
   * Keyframes come every segmentTarget exactly (an encoded rendition's fixed GOP): a segment
   * closes with the part that fills it, not one part later when the next keyframe arrives.
   */
  fixedGop?: boolean;
  /** Names are `<prefix>_<msn>.m4s`, `<prefix>_p<id>.m4s`, `<prefix>_init<n>.mp4`: unique per session. */
  uriPrefix: string;
  /** The first segment's media sequence number (1 unless the session says otherwise; never 0). */
  firstMsn?: number;
  /**
   * Live DVR: the playlist lists complete segments this many seconds back (at least the
   * window). Those that left memory are listed from storage (`archived`); 0 or unsaid: off.
   */
  dvrSeconds?: number;
}

/** The time the run's media timeline starts at, in wall-clock ms: one per run, shared by the session's renditions. */
export interface RunClock {
  originMs?: number;
}

export interface HlsMap {
  id: number;
  uri: string;
  bytes: Buffer;
  tracks: InitTrack[];
  /** RFC 6381 codec strings of its tracks, video first. */
  codecs: string[];
}

export interface HlsPart {
  /** Global within the track (survives segment and run boundaries, so a hinted URI stays valid). */
  id: number;
  uri: string;
  msn: number;
  /** Its index within its segment. */
  index: number;
  /** seconds */
  duration: number;
  /** It starts with a keyframe: a player can start or switch here. */
  independent: boolean;
  bytes: Buffer;
}

export interface HlsSegment {
  msn: number;
  uri: string;
  parts: HlsPart[];
  /** seconds */
  duration: number;
  /** Wall-clock ms of its first sample (EXT-X-PROGRAM-DATE-TIME). */
  programDateTime: number;
  /** The first segment of a new run (a restart or a reconnect): timestamps start anew. */
  discontinuity: boolean;
  map: HlsMap;
  /** The parts' bytes, concatenated once the segment is complete (a CMAF segment of chunks). */
  bytes: Buffer | undefined;
  size: number;
}

/** What one fragment did. */
export interface FragmentResult {
  part: HlsPart;
  /** The segment it closed (a new one starts with this part). */
  closed?: HlsSegment;
  /** Segments that left the grace list: storage may delete them now. */
  retired: HlsSegment[];
}

export class TrackError extends Error {
  override readonly name = "TrackError";
}

/** Seconds, kept in the timescale's integer ticks to add up without drift. */
const ticksToSeconds = (ticks: number, timescale: number) => ticks / timescale;

export class RenditionTrack {
  /** Complete segments still served: the listed window, then the grace list before it. */
  private readonly complete: HlsSegment[] = [];
  /** DVR: complete segments older than those in memory, within the window (no bytes: storage has them). */
  private readonly archive: HlsSegment[] = [];
  /** DVR: segments that left the window, their files kept for a grace before storage may delete them. */
  private readonly unlisted: HlsSegment[] = [];
  /** DVR: the archive's and the memory's segments' seconds together. */
  private dvrListedSeconds = 0;
  private listedCache: HlsSegment[] | undefined;
  private open: HlsSegment | undefined;
  private map: HlsMap | undefined;
  private clock: RunClock = {};
  private nextMsn: number;
  private nextPartId = 0;
  private nextMapId = 0;
  private runHasMedia = false;
  private hadMedia = false;
  /** Discontinuities among segments that left the listed window. */
  private droppedDiscontinuities = 0;
  private peakBitsPerSecond = 0;
  private totalBits = 0;
  private totalSeconds = 0;
  /** Segments completed in the session. */
  private completed = 0;
  private isEnded = false;
  /** A segment of this session opened on a part that is not independent (a forced cut). */
  private cutBetweenKeyframes = false;

  /** DVR: the seconds listed now: the asked window, or less while storage cannot hold it (setDvrWindow). */
  private dvrWindow: number;

  constructor(readonly o: TrackOptions) {
    this.nextMsn = Math.max(1, o.firstMsn ?? 1);
    this.dvrWindow = o.dvrSeconds ?? 0;
  }

  /**
   * DVR: list `seconds` back instead (never more than asked): storage short of room for the
   * whole window shortens it, and lengthens it again once room comes back. Below what is listed
   * (a disk short of what the window already holds), the oldest segments leave the playlist with
   * the next complete segment; the last grace list of them keeps its files, the rest are handed
   * to storage at once: the room is needed now, and a player back there jumps forward.
   */
  setDvrWindow(seconds: number): void {
    this.dvrWindow = Math.max(0, Math.min(this.o.dvrSeconds ?? 0, seconds));
  }

  /** DVR: the window in force (s), and the seconds of media the playlist lists now. */
  get dvrSpan(): { window: number; listed: number } {
    return { window: this.dvrWindow, listed: this.dvrListedSeconds };
  }

  /** A new init segment: the start of a run of the encoder (the first, a restart, a reconnect). */
  newInit(bytes: Buffer, clock: RunClock): HlsMap {
    this.closeOpen();
    const tracks = parseInit(bytes);
    if (tracks.length === 0) throw new TrackError("an init segment with no tracks");
    const video = tracks.filter((t) => t.handler === "vide");
    const id = this.nextMapId++;
    this.map = {
      id,
      uri: `${this.o.uriPrefix}_init${id}.mp4`,
      bytes,
      tracks,
      codecs: [...video, ...tracks.filter((t) => t.handler !== "vide")].map((t) => t.codec).filter((c) => c !== ""),
    };
    this.clock = clock;
    this.runHasMedia = false;
    this.isEnded = false;
    return this.map;
  }

  /** A fragment (moof + mdat) of the current run: one part. */
  addFragment(bytes: Buffer, nowMs: number): FragmentResult {
    const map = this.map;
    if (!map) throw new TrackError("a fragment before any init segment");
    const info = parseFragment(bytes, map.tracks);
    // Video leads; a fragment without video (the publisher's video stalled, its audio did not)
    // is timed by what it has, and no player starts there.
    const withSamples = info.tracks.filter((t) => t.sampleCount > 0);
    const videoId = map.tracks.find((t) => t.handler === "vide")?.id;
    const lead = withSamples.find((t) => t.id === videoId) ?? withSamples[0];
    if (!lead) throw new TrackError("a fragment without samples");
    const leadInit = map.tracks.find((t) => t.id === lead.id);
    if (!leadInit) throw new TrackError(`a fragment of track ${lead.id}, which the init segment does not have`);
    const start = ticksToSeconds(lead.baseDecodeTime, leadInit.timescale);
    const duration = ticksToSeconds(lead.duration, leadInit.timescale);
    // The part has just been written: its end is now. The run's timeline maps to the wall
    // clock from its first part on (ffmpeg's own wall-clock stamps come late).
    if (this.clock.originMs === undefined) this.clock.originMs = nowMs - (start + duration) * 1000;
    const independent = lead.id === videoId ? lead.startsWithSync : videoId === undefined;

    let closed: HlsSegment | undefined;
    const open = this.open;
    if (open) {
      const keyframeCut = independent && open.duration >= this.o.segmentTarget * 0.9;
      // EXTINF rounded to the nearest second may not pass TARGETDURATION (RFC 8216 §4.3.3.1).
      const forcedCut = Math.round(open.duration + duration) > this.o.targetDuration;
      if (keyframeCut || forcedCut) closed = this.closeOpen();
    }
    let segment = this.open;
    if (!segment) {
      if (!independent) this.cutBetweenKeyframes = true;
      const msn = this.nextMsn++;
      segment = {
        msn,
        uri: `${this.o.uriPrefix}_${msn}.m4s`,
        parts: [],
        duration: 0,
        programDateTime: this.clock.originMs + start * 1000,
        discontinuity: this.hadMedia && !this.runHasMedia,
        map,
        bytes: undefined,
        size: 0,
      };
      this.open = segment;
    }
    this.runHasMedia = true;
    this.hadMedia = true;
    const id = this.nextPartId++;
    const part: HlsPart = { id, uri: this.partUri(id), msn: segment.msn, index: segment.parts.length, duration, independent, bytes };
    segment.parts.push(part);
    segment.duration += duration;
    segment.size += bytes.length;
    // A fixed GOP puts the next keyframe exactly one segment after this segment's: a segment
    // that began on a keyframe and is exactly that long is complete now.
    if (!closed && this.o.fixedGop && segment.parts[0]!.independent && Math.abs(segment.duration - this.o.segmentTarget) < 1e-3) closed = this.closeOpen();
    return { part, ...(closed ? { closed } : {}), retired: closed ? this.retire() : [] };
  }

  /** The run ended (its encoder stopped): the open segment closes, short as it may be. */
  endRun(): { closed?: HlsSegment; retired: HlsSegment[] } {
    const closed = this.closeOpen();
    return closed ? { closed, retired: this.retire() } : { retired: [] };
  }

  /** The session ended: the playlist gets its ENDLIST. */
  end(): { closed?: HlsSegment; retired: HlsSegment[] } {
    const r = this.endRun();
    this.isEnded = true;
    return r;
  }

  get ended(): boolean {
    return this.isEnded;
  }

  /** Every segment of the session so far (the open one too) starts on a keyframe; once one does not, never again. */
  get everySegmentStartsOnKeyframe(): boolean {
    return !this.cutBetweenKeyframes;
  }

  /** The segments a playlist lists, oldest first: the window, or with DVR every one still within it. */
  get listed(): HlsSegment[] {
    // Asked for on every render and rendition report: made once per change (a DVR list runs to thousands).
    this.listedCache ??= this.dvr ? [...this.archive, ...this.complete] : this.complete.slice(-this.o.windowSegments);
    return this.listedCache;
  }

  private get dvr(): boolean {
    return (this.o.dvrSeconds ?? 0) > 0;
  }

  /** The segment being written (its parts so far), if any. */
  get openSegment(): HlsSegment | undefined {
    return this.open;
  }

  /** The MSN the next part goes to, and that part's id (the preload hint). */
  get next(): { msn: number; partId: number; partUri: string } {
    const msn = this.open ? this.open.msn : this.nextMsn;
    return { msn, partId: this.nextPartId, partUri: this.partUri(this.nextPartId) };
  }

  get mediaSequence(): number {
    const first = this.dvr ? (this.archive[0] ?? this.complete[0]) : this.complete[Math.max(0, this.complete.length - this.o.windowSegments)];
    return first?.msn ?? this.open?.msn ?? this.nextMsn;
  }

  get discontinuitySequence(): number {
    return this.droppedDiscontinuities;
  }

  get currentMap(): HlsMap | undefined {
    return this.map;
  }

  /** Segments completed in the session so far. */
  get completeSegments(): number {
    return this.completed;
  }

  /** The last complete segment's MSN (0 before any). */
  get lastCompleteMsn(): number {
    return this.complete[this.complete.length - 1]?.msn ?? 0;
  }

  /** Bits per second: the peak over complete segments, and the average over the run of the session. */
  get bandwidth(): { peak: number; average: number } {
    return { peak: this.peakBitsPerSecond, average: this.totalSeconds > 0 ? this.totalBits / this.totalSeconds : 0 };
  }

  segment(msn: number): HlsSegment | undefined {
    return this.complete.find((s) => s.msn === msn);
  }

  /** A DVR segment listed but no longer in memory (its file is in storage): its name and map. */
  archived(msn: number): HlsSegment | undefined {
    const first = this.archive[0];
    if (!first || msn < first.msn) return undefined;
    // MSNs grow by one from segment to segment: the index is the distance.
    const at = this.archive[msn - first.msn];
    return at?.msn === msn ? at : this.archive.find((s) => s.msn === msn);
  }

  /** A part of a segment still served (listed, in grace or open). */
  part(id: number): HlsPart | undefined {
    const open = this.open?.parts.find((x) => x.id === id);
    if (open) return open;
    for (let i = this.complete.length - 1; i >= 0; i--) {
      const s = this.complete[i]!;
      if (s.parts.length === 0 || s.parts[0]!.id > id) continue;
      return s.parts.find((x) => x.id === id);
    }
    return undefined;
  }

  /** An init segment still referenced by a served segment (or the current one), the DVR window's too. */
  mapById(id: number): HlsMap | undefined {
    if (this.map?.id === id) return this.map;
    return (this.complete.find((s) => s.map.id === id) ?? this.archive.find((s) => s.map.id === id))?.map;
  }

  private partUri(id: number): string {
    return `${this.o.uriPrefix}_p${id}.m4s`;
  }

  private closeOpen(): HlsSegment | undefined {
    const s = this.open;
    this.open = undefined;
    if (!s || s.parts.length === 0) return undefined;
    const bytes = Buffer.concat(s.parts.map((p) => p.bytes));
    // The parts become views of the segment: the window holds each byte once.
    let at = 0;
    for (const p of s.parts) {
      const n = p.bytes.length;
      p.bytes = bytes.subarray(at, at + n);
      at += n;
    }
    s.bytes = bytes;
    this.complete.push(s);
    this.listedCache = undefined;
    this.completed++;
    if (s.duration > 0) {
      const bits = bytes.length * 8;
      this.peakBitsPerSecond = Math.max(this.peakBitsPerSecond, bits / s.duration);
      this.totalBits += bits;
      this.totalSeconds += s.duration;
    }
    // A segment leaving the listed window takes its discontinuity with it (DVR: see trimDvr).
    const leaving = this.dvr ? undefined : this.complete[this.complete.length - 1 - this.o.windowSegments];
    if (leaving?.discontinuity) this.droppedDiscontinuities++;
    this.dvrListedSeconds += s.duration;
    return s;
  }

  /**
   * RFC 8216 §6.2.2: a segment that left the playlist stays available for its duration plus
   * the playlist's; the grace list is one window plus two segments long.
   */
  private retire(): HlsSegment[] {
    // One more than the minimum: a short segment (a run's last) shortens what the count covers.
    const keep = this.o.windowSegments * 2 + 2;
    const out = this.complete.length > keep ? this.complete.splice(0, this.complete.length - keep) : [];
    this.listedCache = undefined;
    if (!this.dvr) return out;
    // Out of memory, still listed: a copy without the bytes (a write still queued may read the original's).
    for (const s of out) this.archive.push({ ...s, parts: [], bytes: undefined });
    return this.trimDvr();
  }

  /**
   * DVR: the oldest archived segments leave the playlist once the rest cover the window, then
   * stay in storage for a grace list as long as the one without DVR (one window plus two
   * segments, RFC 8216 §6.2.2 as far as a player can still hold a playlist that listed them
   * and be playing there); only those that leave it can be deleted.
   */
  private trimDvr(): HlsSegment[] {
    const window = this.dvrWindow;
    while (this.archive.length > 0 && this.dvrListedSeconds - this.archive[0]!.duration >= window) {
      const s = this.archive.shift()!;
      this.dvrListedSeconds -= s.duration;
      if (s.discontinuity) this.droppedDiscontinuities++;
      this.unlisted.push(s);
    }
    const keep = this.o.windowSegments + 2;
    return this.unlisted.length > keep ? this.unlisted.splice(0, this.unlisted.length - keep) : [];
  }
}
