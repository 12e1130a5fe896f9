import { ApiRateLimiter, idleAfterMs, refill, takeToken, type Bucket } from "../../../src/api/rateLimit";

const s = { perSecond: 2, burst: 3 };

describe("token bucket arithmetic (fixed clock)", () => {
  it("a new key starts with a full bucket and spends one token per request", () => {
    let b: Bucket | undefined;
    const outcomes: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      const r = takeToken(b, 1000, s);
      outcomes.push(r.allowed);
      b = r.bucket;
    }
    expect(outcomes).toEqual([true, true, true, false]);
    expect(b).toEqual({ tokens: 0, atMs: 1000 });
  });

  it.each([
    // [tokens left, ms since, settings, allowed, retryAfter]
    [0, 0, { perSecond: 2, burst: 3 }, false, 1], // half a second for a token: rounded up to 1
    [0, 499, { perSecond: 2, burst: 3 }, false, 1],
    [0, 500, { perSecond: 2, burst: 3 }, true, undefined],
    [0, 0, { perSecond: 1, burst: 3 }, false, 1],
    [0.25, 0, { perSecond: 1, burst: 3 }, false, 1],
    [0, 999, { perSecond: 1, burst: 3 }, false, 1],
    [0, 1000, { perSecond: 1, burst: 3 }, true, undefined],
    [0, 0, { perSecond: 0.25, burst: 1 }, false, 4],
    [0, 1000, { perSecond: 0.25, burst: 1 }, false, 3],
  ])("tokens %p, %p ms later, %p → allowed %p, Retry-After %p", (tokens, elapsed, settings, allowed, retryAfter) => {
    const r = takeToken({ tokens, atMs: 10_000 }, 10_000 + elapsed, settings);
    expect(r.allowed).toBe(allowed);
    expect(r.allowed ? undefined : r.retryAfterSeconds).toBe(retryAfter);
  });

  it("refills at the rate, never past the burst, and not when the clock goes back", () => {
    expect(refill({ tokens: 0, atMs: 0 }, 1000, s)).toEqual({ tokens: 2, atMs: 1000 });
    expect(refill({ tokens: 0, atMs: 0 }, 60_000, s)).toEqual({ tokens: 3, atMs: 60_000 });
    expect(refill({ tokens: 1, atMs: 5000 }, 4000, s)).toEqual({ tokens: 1, atMs: 5000 });
    expect(refill(undefined, 7, s)).toEqual({ tokens: 3, atMs: 7 });
  });

  it("a refused request takes nothing: retrying does not delay recovery", () => {
    let b: Bucket = { tokens: 0, atMs: 0 };
    for (let t = 0; t < 500; t += 50) {
      const r = takeToken(b, t, s);
      expect(r.allowed).toBe(false);
      b = r.bucket;
    }
    expect(takeToken(b, 500, s).allowed).toBe(true);
  });

  it("a bucket is full again (droppable) after burst / rate", () => {
    expect(idleAfterMs(s)).toBe(1500);
    expect(refill({ tokens: 0, atMs: 0 }, idleAfterMs(s), s).tokens).toBe(s.burst);
  });
});

describe("ApiRateLimiter", () => {
  it("keeps one bucket per key and answers the seconds to wait", () => {
    let now = 0;
    const limiter = new ApiRateLimiter({ perSecond: 1, burst: 2 }, () => now);
    expect([limiter.take("a"), limiter.take("a"), limiter.take("a")]).toEqual([undefined, undefined, 1]);
    expect(limiter.take("b")).toBeUndefined();
    now = 1000;
    expect([limiter.take("a"), limiter.take("a")]).toEqual([undefined, 1]);
  });

  it("is off with a rate of 0", () => {
    const limiter = new ApiRateLimiter({ perSecond: 0, burst: 1 }, () => 0);
    for (let i = 0; i < 100; i++) expect(limiter.take("a")).toBeUndefined();
    expect(limiter.size).toBe(0);
  });

  it("drops idle buckets, so memory follows the keys in recent use", () => {
    let now = 0;
    const limiter = new ApiRateLimiter({ perSecond: 10, burst: 10 }, () => now);
    for (let i = 0; i < 1000; i++) limiter.take(`key-${i}`);
    expect(limiter.size).toBe(1000);
    now = 61_000;
    limiter.take("fresh");
    expect(limiter.size).toBe(1);
  });
});
