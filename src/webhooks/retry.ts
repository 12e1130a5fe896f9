// What one attempt's outcome means, and when to try again: pure, so the whole policy is
// unit-tested as a table (test/unit/webhooks/retry.test.ts).

/** Spec 8: retries for about 15 minutes with exponential back-off. */
export interface RetrySchedule {
  /** The first retry comes this long after the first attempt; each later gap doubles. */
  firstDelayMs: number;
  /** No attempt after this long since the event (or the resend). */
  windowMs: number;
  /** Each gap is varied by up to ± this fraction, so that receivers coming back after an outage
   * are not hit by every pending delivery in the same instant. */
  jitter: number;
}

export const SPEC_SCHEDULE: RetrySchedule = { firstDelayMs: 5_000, windowMs: 15 * 60_000, jitter: 0.2 };

/**
 * How long to wait before attempt `attemptsMade + 1`, or null when the window is over: gaps of
 * first·2^(n-1) ± jitter, and one last attempt at the window's end where doubling overshoots
 * it. The real schedule tries at about 0, 5, 15, 35, 75, 155, 315, 635 and 900 s.
 *
 * @param random a number in [0, 1): 0.5 means no jitter.
 */
export function nextRetryDelay(
  schedule: RetrySchedule,
  attemptsMade: number,
  windowStart: number,
  now: number,
  random: number,
): number | null {
  const remaining = windowStart + schedule.windowMs - now;
  const base = schedule.firstDelayMs * 2 ** Math.max(0, attemptsMade - 1);
  const delay = Math.max(0, Math.round(base * (1 + schedule.jitter * (2 * random - 1))));
  if (delay <= remaining) return delay;
  // A last attempt closer than one first gap to the previous would add little: stop instead.
  return remaining >= schedule.firstDelayMs ? remaining : null;
}

/** Why an attempt got no HTTP status. */
export type AttemptFailure =
  /** No response within the attempt timeout. */
  | "timeout"
  /** DNS, connection refused or reset, TLS: the receiver may be back later. */
  | "network"
  /** We would not send: a destination the outbound policy refuses, or an unusable URL. */
  | "refused";

export type Verdict = "delivered" | "retry" | "final";

/**
 * 2xx ends a delivery. 408, 429 and 5xx, timeouts and network errors are worth retrying. Other
 * 4xx are final: the receiver understood and declined. 3xx is final too: redirects are not
 * followed (a receiver must not be able to point onair's requests elsewhere), and retrying gets
 * the same redirect.
 */
export function judgeAttempt(outcome: { statusCode?: number; failure?: AttemptFailure }): Verdict {
  const code = outcome.statusCode;
  if (code === undefined) return outcome.failure === "refused" ? "final" : "retry";
  if (code >= 200 && code < 300) return "delivered";
  if (code === 408 || code === 429 || code >= 500) return "retry";
  return "final";
}
