import type { Logger } from "../log";

// One way to keep a supervised process going: pull sources, SRT listeners, multistream pushes and
// live pipelines all restart through a RestartLoop, so they back off on one kind of schedule, log
// one shape of line ("<what> <why>: retrying" with failuresInARow and retryInMs, or "…: giving
// up") and count in one metric (onair_restarts_total{kind,outcome}). The schedule is pure; the
// loop holds one thing's state (failures in a row, the pending timer, the last problem).

/** How a failing thing backs off (pure data). */
export interface RestartSchedule {
  /** The wait after the first failure. */
  firstMs: number;
  /** Waits double up to this. */
  maxMs: number;
  /**
   * A run that lasted at least this long had recovered: its failure starts the schedule over.
   * A source or destination that accepts and drops at once keeps backing off.
   */
  stableMs: number;
  /** Failures in a row after which the loop gives up; undefined: it never does. */
  maxFailures?: number;
}

/** Pulls and multistream pushes: 1, 2, 4, 8, 16, 30, 30… s; at most two tries a minute after a blip. */
export const REMOTE_SCHEDULE: RestartSchedule = { firstMs: 1_000, maxMs: 30_000, stableMs: 30_000 };
/** An SRT listener re-armed after its caller left: OBS reconnects after 2 s, so at once, unless it keeps exiting. */
export const LISTENER_SCHEDULE: RestartSchedule = { firstMs: 200, maxMs: 10_000, stableMs: 3_000 };
/**
 * A live pipeline that died under its publisher: 0.5, 1, 2 s, then the session ends (viewers are
 * waiting); a run that played for a minute wipes the count (crashes hours apart are not a loop).
 */
export const PIPELINE_SCHEDULE: RestartSchedule = { firstMs: 500, maxMs: 2_000, stableMs: 60_000, maxFailures: 3 };

/** The wait before the next attempt after `failures` failures in a row (1 = the first). */
export function restartDelayMs(failures: number, s: RestartSchedule): number {
  const n = Math.max(1, Math.floor(failures));
  // 2 ** n overflows to Infinity for a long outage: Math.min still gives maxMs.
  return Math.min(s.maxMs, s.firstMs * 2 ** (n - 1));
}

/**
 * Failures in a row once an attempt has failed: 1 when that attempt had run for `stableMs`,
 * else one more. `ranForMs` is undefined when it never ran (refused, could not start).
 */
export function failuresAfter(previous: number, ranForMs: number | undefined, s: RestartSchedule): number {
  if (ranForMs !== undefined && ranForMs >= s.stableMs) return 1;
  return previous + 1;
}

/** What is restarted, as the metric's `kind` label. */
export type RestartKind = "pull" | "srt_listener" | "multistream_push" | "pipeline";

/** The metric every loop counts in (src/metrics: onair_restarts_total). */
export interface RestartMetrics {
  counted(kind: RestartKind, outcome: "retry" | "gave_up"): void;
}

/** Timers, as a seam for tests that step time. */
export interface RestartTimers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const REAL_TIMERS: RestartTimers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface RestartLoopOptions {
  kind: RestartKind;
  /** Named in the log lines: "pull", "SRT listener", "multistream push", "pipeline". */
  what: string;
  schedule: RestartSchedule;
  log: Logger;
  metrics?: RestartMetrics;
  timers?: RestartTimers;
}

/** Where a loop stands, as status endpoints and tests read it. */
export interface RestartStatus {
  /** Failures in a row. */
  failures: number;
  /** When the next attempt is due, while one is waiting. */
  retryAt: number | undefined;
  lastProblem: string | undefined;
}

export interface Failure {
  /** How long the run lasted; undefined when it never ran. */
  ranForMs?: number;
  /** Logged with the line: exit code, stderr tail, what was refused. */
  fields?: Record<string, unknown>;
  /** Retrying cannot help (a url that is not accepted, a destination that refused the key). */
  permanent?: boolean;
  /**
   * Not the thing's fault (its input ended because the publisher left): logged at info, and
   * the failures in a row are not raised.
   */
  expected?: boolean;
}

/**
 * One supervised thing's restarts. `failed()` after each run that ended on its own (or an attempt
 * that could not start) schedules `next` after the back-off, or gives up; `cancel()` when it is
 * stopped; `now()` to skip a pending wait (start-pull).
 */
export class RestartLoop {
  private count = 0;
  private timer: unknown;
  private due: number | undefined;
  private problem: string | undefined;
  private readonly timers: RestartTimers;

  constructor(private readonly o: RestartLoopOptions) {
    this.timers = o.timers ?? REAL_TIMERS;
  }

  get failures(): number {
    return this.count;
  }

  /** A retry is waiting. */
  get pending(): boolean {
    return this.timer !== undefined;
  }

  status(): RestartStatus {
    return { failures: this.count, retryAt: this.due, lastProblem: this.problem };
  }

  /**
   * A run ended on its own or an attempt could not start: `next` runs after the back-off.
   * Returns the wait, or undefined when the loop gave up (permanent, or maxFailures reached):
   * then nothing is scheduled and the caller ends the thing.
   */
  failed(why: string, next: () => void, f: Failure = {}): number | undefined {
    const { schedule, log, what } = this.o;
    this.cancel();
    this.problem = why;
    if (!f.expected) this.count = failuresAfter(this.count, f.ranForMs, schedule);
    const fields = { ...f.fields, ...(f.ranForMs === undefined ? {} : { ranForMs: f.ranForMs }), failuresInARow: this.count };
    if (f.permanent || (schedule.maxFailures !== undefined && this.count > schedule.maxFailures)) {
      log.error(fields, `${what} ${why}: giving up`);
      this.o.metrics?.counted(this.o.kind, "gave_up");
      return undefined;
    }
    const retryInMs = restartDelayMs(Math.max(1, this.count), schedule);
    if (f.expected) log.info({ ...fields, retryInMs }, `${what} ${why}: retrying`);
    else log.warn({ ...fields, retryInMs }, `${what} ${why}: retrying`);
    this.o.metrics?.counted(this.o.kind, "retry");
    this.schedule(next, retryInMs);
    return retryInMs;
  }

  /** Skips a pending wait: the failures in a row start over and `next` runs at once. */
  now(next: () => void): void {
    this.cancel();
    this.count = 0;
    next();
  }

  /** A run that went well enough to forget the past (a pipeline serving again, a push connected). */
  recovered(): void {
    this.count = 0;
    this.problem = undefined;
  }

  /** No retry from now on (stopped, removed, shut down). */
  cancel(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.due = undefined;
  }

  private schedule(next: () => void, ms: number): void {
    this.due = this.timers.now() + ms;
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      this.due = undefined;
      next();
    }, ms);
  }
}
