// Concurrent viewers, counted at the server from HLS playlist requests: a viewer is a player
// session (its viewer id) that asked for a playlist of a playback id within the window. Players
// reload a live playlist every part or segment (a second or two), so 30 s of silence means the
// player is gone. WebRTC (WHEP) playback tells its viewers every few seconds under ids that start
// with WEBRTC_VIEWER_PREFIX, which is how they are counted apart from HLS's.
//
// Memory stays bounded whatever clients send: entries older than the window are dropped as
// counting goes; each playback id tracks at most `maxPerPlayback` viewers and the whole counter
// at most `maxTotal`; ids longer than MAX_ID_LENGTH are not tracked. A flood of made-up viewer
// ids saturates a count at its cap instead of growing the process.

export const DEFAULT_VIEWER_WINDOW_MS = 30_000;
/** Longer viewer or playback ids are not tracked (ours are 16-36 characters). */
export const MAX_ID_LENGTH = 128;

/**
 * A WebRTC viewer's id starts with this; HLS viewer ids (16 characters minted by the playback
 * gate) are counted as HLS.
 */
export const WEBRTC_VIEWER_PREFIX = "webrtc-";

/** A playback id's viewers now: all of them, and how many of those watch over WebRTC (the rest play HLS). */
export interface ViewerCount {
  viewers: number;
  webrtc: number;
}

/** The viewers of one playback id. */
interface Audience {
  /** viewer id → when last seen, in order of last sighting (a sighting moves the viewer to the end), so the expired ones are always at its start. */
  lastSeen: Map<string, number>;
  /** How many of them are WebRTC viewers: kept as they come and go, so counting never walks the ids. */
  webrtc: number;
}

const isWebrtc = (viewerId: string) => viewerId.startsWith(WEBRTC_VIEWER_PREFIX);

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
  /** playback id → its viewers. */
  private readonly viewers = new Map<string, Audience>();
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
    const last = ofPlayback?.lastSeen.get(viewerId);
    if (ofPlayback && last !== undefined) {
      // Moved to the end: the map stays in order of last sighting.
      ofPlayback.lastSeen.delete(viewerId);
      ofPlayback.lastSeen.set(viewerId, Math.max(last, nowMs));
      return;
    }
    // A new viewer: room is made by forgetting the expired first; a full counter refuses it.
    if (ofPlayback && ofPlayback.lastSeen.size >= this.maxPerPlayback) this.expire(playbackId, ofPlayback, nowMs);
    // At most once a second: under a flood every new id would otherwise walk the whole counter.
    if (this.total >= this.maxTotal && nowMs - this.lastFullExpiry >= 1_000) this.expireAll(nowMs);
    if ((ofPlayback && ofPlayback.lastSeen.size >= this.maxPerPlayback) || this.total >= this.maxTotal) return;
    if (!ofPlayback) {
      ofPlayback = { lastSeen: new Map(), webrtc: 0 };
      this.viewers.set(playbackId, ofPlayback);
    }
    ofPlayback.lastSeen.set(viewerId, nowMs);
    if (isWebrtc(viewerId)) ofPlayback.webrtc++;
    this.total++;
  }

  /** Whether `viewerId` asked for a playlist of `playbackId` within the window: a player still watching. */
  watching(playbackId: string, viewerId: string, nowMs: number = Date.now()): boolean {
    const last = this.viewers.get(playbackId)?.lastSeen.get(viewerId);
    return last !== undefined && last > nowMs - this.windowMs;
  }

  /** Viewers per playback id at `nowMs` (only ids with at least one); forgets the expired. */
  counts(nowMs: number = Date.now()): Map<string, number> {
    return new Map([...this.countsByProtocol(nowMs)].map(([playbackId, c]) => [playbackId, c.viewers]));
  }

  /** Viewers per playback id at `nowMs` with how many watch over WebRTC (only ids with at least one viewer); forgets the expired. */
  countsByProtocol(nowMs: number = Date.now()): Map<string, ViewerCount> {
    this.expireAll(nowMs);
    const counts = new Map<string, ViewerCount>();
    for (const [playbackId, ofPlayback] of this.viewers) counts.set(playbackId, { viewers: ofPlayback.lastSeen.size, webrtc: ofPlayback.webrtc });
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

  private expire(playbackId: string, ofPlayback: Audience, nowMs: number): void {
    const oldest = nowMs - this.windowMs;
    for (const [viewerId, lastSeen] of ofPlayback.lastSeen) {
      if (lastSeen > oldest) break;
      ofPlayback.lastSeen.delete(viewerId);
      if (isWebrtc(viewerId)) ofPlayback.webrtc--;
      this.total--;
    }
    if (ofPlayback.lastSeen.size === 0) this.viewers.delete(playbackId);
  }
}
