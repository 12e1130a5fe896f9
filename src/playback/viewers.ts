// Concurrent viewers, counted at the server from HLS playlist requests: a viewer is a player
// session (its viewer id) that asked for a playlist of a playback id within the window. Players
// reload a live playlist every part or segment (a second or two), so 30 s of silence means the
// player is gone.
//
// Memory stays bounded whatever clients send: entries older than the window are dropped as
// counting goes; each playback id tracks at most `maxPerPlayback` viewers and the whole counter
// at most `maxTotal`; ids longer than MAX_ID_LENGTH are not tracked. A flood of made-up viewer
// ids saturates a count at its cap instead of growing the process.

export const DEFAULT_VIEWER_WINDOW_MS = 30_000;
/** Longer viewer or playback ids are not tracked (ours are 16-36 characters). */
export const MAX_ID_LENGTH = 128;

export interface ViewerCounterOptions {
  /** A viewer counts while seen within this long, ms (VIEWER_WINDOW_SECONDS). */
  windowMs?: number;
  /** Viewers tracked per playback id; new ones beyond it are not counted until some leave. */
  maxPerPlayback?: number;
  /** Viewers tracked in all. */
  maxTotal?: number;
}

export class ViewerCounter {
  readonly windowMs: number;
  private readonly maxPerPlayback: number;
  private readonly maxTotal: number;
  /**
   * playback id → viewer id → when last seen. Each inner map is in order of last sighting (a
   * sighting moves the viewer to the end), so the expired ones are always at its start.
   */
  private readonly viewers = new Map<string, Map<string, number>>();
  private total = 0;
  private lastFullExpiry = -Infinity;

  constructor(options: ViewerCounterOptions = {}) {
    this.windowMs = options.windowMs ?? DEFAULT_VIEWER_WINDOW_MS;
    this.maxPerPlayback = options.maxPerPlayback ?? 10_000;
    this.maxTotal = options.maxTotal ?? 100_000;
  }

  /** A playlist request of `playbackId` carrying `viewerId`, at `nowMs`. */
  seen(playbackId: string, viewerId: string, nowMs: number = Date.now()): void {
    if (playbackId === "" || viewerId === "" || playbackId.length > MAX_ID_LENGTH || viewerId.length > MAX_ID_LENGTH) return;
    let ofPlayback = this.viewers.get(playbackId);
    const last = ofPlayback?.get(viewerId);
    if (ofPlayback && last !== undefined) {
      // Moved to the end: the map stays in order of last sighting.
      ofPlayback.delete(viewerId);
      ofPlayback.set(viewerId, Math.max(last, nowMs));
      return;
    }
    // A new viewer: room is made by forgetting the expired first; a full counter refuses it.
    if (ofPlayback && ofPlayback.size >= this.maxPerPlayback) this.expire(playbackId, ofPlayback, nowMs);
    // At most once a second: under a flood every new id would otherwise walk the whole counter.
    if (this.total >= this.maxTotal && nowMs - this.lastFullExpiry >= 1_000) this.expireAll(nowMs);
    if ((ofPlayback && ofPlayback.size >= this.maxPerPlayback) || this.total >= this.maxTotal) return;
    if (!ofPlayback) {
      ofPlayback = new Map();
      this.viewers.set(playbackId, ofPlayback);
    }
    ofPlayback.set(viewerId, nowMs);
    this.total++;
  }

  /** Viewers per playback id at `nowMs` (only ids with at least one); forgets the expired. */
  counts(nowMs: number = Date.now()): Map<string, number> {
    this.expireAll(nowMs);
    const counts = new Map<string, number>();
    for (const [playbackId, ofPlayback] of this.viewers) counts.set(playbackId, ofPlayback.size);
    return counts;
  }

  /** Viewers tracked now, expired ones included until the next count (for tests and metrics). */
  get tracked(): number {
    return this.total;
  }

  private expireAll(nowMs: number): void {
    this.lastFullExpiry = nowMs;
    for (const [playbackId, ofPlayback] of this.viewers) this.expire(playbackId, ofPlayback, nowMs);
  }

  private expire(playbackId: string, ofPlayback: Map<string, number>, nowMs: number): void {
    const oldest = nowMs - this.windowMs;
    for (const [viewerId, lastSeen] of ofPlayback) {
      if (lastSeen > oldest) break;
      ofPlayback.delete(viewerId);
      this.total--;
    }
    if (ofPlayback.size === 0) this.viewers.delete(playbackId);
  }
}
