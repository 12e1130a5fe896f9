// The retry schedule of a failing push, as pure functions.

export interface RetrySchedule {
  /** The wait after the first failure. */
  firstMs: number;
  /** Waits double up to this. */
  maxMs: number;
  /**
   * A push that stayed connected at least this long had recovered: its next failure starts
   * the schedule over. A destination that accepts and drops at once keeps backing off.
   */
  stableMs: number;
}

/** 1, 2, 4, 8, 16, 30, 30… seconds: fast recovery from a blip, at most two tries a minute after. */
export const RETRY_SCHEDULE: RetrySchedule = { firstMs: 1_000, maxMs: 30_000, stableMs: 30_000 };

/** The wait before the next attempt after `failures` failures in a row (1 = the first). */
export function retryDelayMs(failures: number, s: RetrySchedule = RETRY_SCHEDULE): number {
  const n = Math.max(1, Math.floor(failures));
  // 2 ** n overflows to Infinity for a long outage: Math.min still gives maxMs.
  return Math.min(s.maxMs, s.firstMs * 2 ** (n - 1));
}

/**
 * Failures in a row once an attempt has failed: reset to 1 when that attempt had stayed
 * connected for `stableMs`, else one more. `connectedForMs` is undefined when it never connected.
 */
export function failuresAfter(previous: number, connectedForMs: number | undefined, s: RetrySchedule = RETRY_SCHEDULE): number {
  if (connectedForMs !== undefined && connectedForMs >= s.stableMs) return 1;
  return previous + 1;
}
