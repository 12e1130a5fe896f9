import { judgeAttempt, nextRetryDelay, SPEC_SCHEDULE, type RetrySchedule } from "../../../src/webhooks";

/** Attempt times (s since the event) when every attempt fails at once and `random` is fixed. */
function attemptTimes(schedule: RetrySchedule, random: () => number): number[] {
  const times = [0];
  for (let attempt = 1; ; attempt++) {
    const now = times[times.length - 1]! * 1000;
    const delay = nextRetryDelay(schedule, attempt, 0, now, random());
    if (delay === null) return times;
    times.push((now + delay) / 1000);
  }
}

describe("retry schedule (docs/api.md#spec-8-limits: about 15 minutes, exponential back-off)", () => {
  it("without jitter: first retry at 5 s, gaps doubling, a last attempt at the 15-minute mark", () => {
    const times = attemptTimes(SPEC_SCHEDULE, () => 0.5);
    expect(times).toEqual([0, 5, 15, 35, 75, 155, 315, 635, 900]);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps).toEqual([5, 10, 20, 40, 80, 160, 320, 265]);
  });

  it.each([
    ["shortest gaps", () => 0],
    ["longest gaps", () => 0.999999],
    ["alternating", (() => { let i = 0; return () => (i++ % 2 ? 0.9 : 0.1); })()],
  ])("with jitter (%s): 8 or 9 attempts, none after 15 minutes, the last within a minute of it", (_label, random) => {
    const times = attemptTimes(SPEC_SCHEDULE, random);
    expect(times.length).toBeGreaterThanOrEqual(8);
    expect(times.length).toBeLessThanOrEqual(9);
    expect(times[times.length - 1]).toBeLessThanOrEqual(900);
    expect(times[times.length - 1]).toBeGreaterThanOrEqual(840);
    // The first retry is "about 5 s": within the ±20% jitter.
    expect(times[1]).toBeGreaterThanOrEqual(4);
    expect(times[1]).toBeLessThanOrEqual(6);
  });

  it.each([
    // [attemptsMade, now (ms since the event), random, expected delay]
    [1, 0, 0.5, 5_000],
    [1, 0, 0, 4_000],
    [1, 0, 0.999999, 6_000],
    [2, 5_000, 0.5, 10_000],
    [7, 315_000, 0.5, 320_000],
    // doubling would overshoot: one last attempt at the window's end
    [8, 635_000, 0.5, 265_000],
    // at the end: no more
    [9, 900_000, 0.5, null],
    // less than a first gap left: stop rather than try twice in a row
    [9, 896_000, 0.5, null],
    // a slow attempt (timeouts) eats into the window too
    [3, 899_000, 0.5, null],
  ])("attempt %i failing %i ms after the event (random %d): next in %p", (attempts, now, random, expected) => {
    expect(nextRetryDelay(SPEC_SCHEDULE, attempts, 0, now, random)).toBe(expected);
  });

  it("counts the window from its own start (a resend's time, not the event's)", () => {
    expect(nextRetryDelay(SPEC_SCHEDULE, 1, 1_000_000, 1_000_000, 0.5)).toBe(5_000);
    expect(nextRetryDelay(SPEC_SCHEDULE, 1, 0, 1_000_000, 0.5)).toBeNull();
  });

  it("compresses for tests without changing its shape", () => {
    const fast = { firstDelayMs: 50, windowMs: 1_000, jitter: 0.2 };
    expect(attemptTimes(fast, () => 0.5).map((t) => Math.round(t * 1000))).toEqual([0, 50, 150, 350, 750, 1000]);
  });
});

describe("what an attempt's outcome means", () => {
  it.each([
    [{ statusCode: 200 }, "delivered"],
    [{ statusCode: 204 }, "delivered"],
    [{ statusCode: 299 }, "delivered"],
    [{ statusCode: 301 }, "final"],
    [{ statusCode: 302 }, "final"],
    [{ statusCode: 307 }, "final"],
    [{ statusCode: 400 }, "final"],
    [{ statusCode: 401 }, "final"],
    [{ statusCode: 404 }, "final"],
    [{ statusCode: 410 }, "final"],
    [{ statusCode: 408 }, "retry"],
    [{ statusCode: 429 }, "retry"],
    [{ statusCode: 500 }, "retry"],
    [{ statusCode: 502 }, "retry"],
    [{ statusCode: 503 }, "retry"],
    [{ statusCode: 504 }, "retry"],
    [{ failure: "timeout" as const }, "retry"],
    [{ failure: "network" as const }, "retry"],
    [{ failure: "refused" as const }, "final"],
  ])("%j → %s", (outcome, verdict) => {
    expect(judgeAttempt(outcome)).toBe(verdict);
  });
});
