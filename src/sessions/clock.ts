/** A timer the clock started; `unref` lets the process exit while it waits. */
export interface ClockTimer {
  unref(): unknown;
}

/**
 * Time as the live sessions see it: the wall clock and timers. The real one by default; tests
 * give a fake one and advance it, so the session rules (windows, back-off) run in milliseconds.
 */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer | undefined): void;
  setInterval(fn: () => void, ms: number): ClockTimer;
  clearInterval(timer: ClockTimer | undefined): void;
}

/** The real clock shifted by `offsetMs` (NODE_CLOCK_OFFSET_MS: a node whose clock is wrong). */
export function offsetClock(offsetMs: number): Clock {
  return offsetMs === 0 ? realClock : { ...realClock, now: () => Date.now() + offsetMs };
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (timer) => clearInterval(timer as NodeJS.Timeout | undefined),
};
