import { createHash } from "node:crypto";

/**
 * Per-API-key rate limit (issue 8): a token bucket per key. Each key may send `burst` requests
 * at once, then `perSecond` a second; a request that finds no token is refused with 429 and
 * takes nothing, so a client that keeps retrying does not push its own recovery further out.
 */

export interface RateSettings {
  /** Tokens added per second; 0 disables the limit. */
  perSecond: number;
  /** Size of the bucket: requests allowed at once after an idle spell. */
  burst: number;
}

export interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date, ms. */
  atMs: number;
}

export type TakeResult =
  | { allowed: true; bucket: Bucket }
  | { allowed: false; bucket: Bucket; /** whole seconds until a token is there, at least 1 */ retryAfterSeconds: number };

/** The bucket refilled up to `nowMs` (a clock that goes backwards refills nothing). */
export function refill(bucket: Bucket | undefined, nowMs: number, s: RateSettings): Bucket {
  if (!bucket) return { tokens: s.burst, atMs: nowMs };
  const elapsedMs = Math.max(0, nowMs - bucket.atMs);
  return { tokens: Math.min(s.burst, bucket.tokens + (elapsedMs * s.perSecond) / 1000), atMs: Math.max(nowMs, bucket.atMs) };
}

/** One request against a bucket (pure): the bucket after it, and whether it may go ahead. */
export function takeToken(bucket: Bucket | undefined, nowMs: number, s: RateSettings): TakeResult {
  const b = refill(bucket, nowMs, s);
  // Refills summed over many small steps drift below whole numbers (0.1 × 10 < 1).
  if (b.tokens >= 1 - 1e-9) return { allowed: true, bucket: { tokens: Math.max(0, b.tokens - 1), atMs: b.atMs } };
  // Retry-After is whole seconds (RFC 9110); rounding up means the token is there by then.
  const retryAfterSeconds = Math.max(1, Math.ceil((1 - b.tokens) / s.perSecond));
  return { allowed: false, bucket: b, retryAfterSeconds };
}

/** A bucket left alone this long is full again, the same as no bucket: it can be dropped. */
export function idleAfterMs(s: RateSettings): number {
  return Math.ceil((s.burst / s.perSecond) * 1000);
}

const SWEEP_EVERY_MS = 60_000;

/**
 * The buckets of every key seen recently, in memory (one process; a restart forgives all).
 * Only authenticated keys get a bucket, and idle ones are swept, so memory stays bounded by
 * the keys in use in the last minute or so.
 */
export class ApiRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweepMs: number;

  constructor(
    private readonly settings: RateSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.lastSweepMs = now();
  }

  get enabled(): boolean {
    return this.settings.perSecond > 0;
  }

  /** Buckets held (tests: memory stays bounded). */
  get size(): number {
    return this.buckets.size;
  }

  /**
   * Counts one request of `apiKey`: undefined when it may go ahead, else the seconds to wait.
   * Buckets are keyed by a hash of the key, so no API key is kept in memory as it is.
   */
  take(apiKey: string): number | undefined {
    if (!this.enabled) return undefined;
    const nowMs = this.now();
    this.sweep(nowMs);
    const id = createHash("sha256").update(apiKey).digest("base64url");
    const result = takeToken(this.buckets.get(id), nowMs, this.settings);
    this.buckets.set(id, result.bucket);
    return result.allowed ? undefined : result.retryAfterSeconds;
  }

  private sweep(nowMs: number): void {
    if (nowMs - this.lastSweepMs < SWEEP_EVERY_MS) return;
    this.lastSweepMs = nowMs;
    const idleMs = idleAfterMs(this.settings);
    for (const [id, b] of this.buckets) {
      if (nowMs - b.atMs >= idleMs) this.buckets.delete(id);
    }
  }
}
