import type { Store } from "../db";
import type { PlaybackSubject } from "./gate";

/** A policy change reaches the gate within this long; a segment request costs no query. */
const SUBJECT_CACHE_MS = 2000;
const SUBJECT_CACHE_MAX = 10_000;

/** Playback id → its stream's owner and policy (undefined: no such stream), cached briefly. */
export function playbackSubjects(store: Store, now: () => number = Date.now): (playbackId: string) => Promise<PlaybackSubject | undefined> {
  const cache = new Map<string, { until: number; subject: Promise<PlaybackSubject | undefined> }>();
  return (playbackId) => {
    const t = now();
    const hit = cache.get(playbackId);
    if (hit && hit.until >= t) return hit.subject;
    if (cache.size >= SUBJECT_CACHE_MAX) {
      for (const [k, v] of cache) if (v.until < t) cache.delete(k);
      // Still full within 2 s (a flood of playback ids): start over, rather than walk it per miss.
      if (cache.size >= SUBJECT_CACHE_MAX) cache.clear();
    }
    const subject = store.streams.getByPlaybackId(playbackId).then(
      (s) => (s ? { playbackId, userId: s.userId, policy: s.playbackPolicy } : undefined),
      (err: unknown) => {
        cache.delete(playbackId);
        throw err;
      },
    );
    cache.set(playbackId, { until: t + SUBJECT_CACHE_MS, subject });
    return subject;
  };
}
