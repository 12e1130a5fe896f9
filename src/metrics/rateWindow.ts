/** A reading of a value that only grows (bytes received, media seconds produced). */
export interface Sample {
  /** ms */
  at: number;
  value: number;
}

/**
 * The rate of a growing value over a trailing window, from readings taken whenever they come
 * (pure: time is given). Keeps the readings of the last `windowMs` plus the newest one before
 * them, so the rate always spans at least the window once that much history exists, and two
 * readings close together (two scrapers, a burst of segments) do not make it jump.
 */
export class RateWindow {
  private readonly samples: Sample[] = [];

  constructor(private readonly windowMs: number) {}

  /** Starts over (a counter that restarted from another base). */
  reset(): void {
    this.samples.length = 0;
  }

  add(at: number, value: number): void {
    this.samples.push({ at, value });
    // Drop readings while the one after them is still old enough to be the window's base.
    while (this.samples.length > 2 && this.samples[1]!.at <= at - this.windowMs) this.samples.shift();
  }

  /** Units per second between the window's base and its newest reading; undefined before two readings. */
  perSecond(): number | undefined {
    return rateBetween(this.samples);
  }
}

/** Units per second from the first to the last reading; undefined when they span no time. */
export function rateBetween(samples: readonly Sample[]): number | undefined {
  if (samples.length < 2) return undefined;
  const first = samples[0]!;
  const last = samples[samples.length - 1]!;
  const seconds = (last.at - first.at) / 1000;
  return seconds > 0 ? (last.value - first.value) / seconds : undefined;
}
