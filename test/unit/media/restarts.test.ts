import { Writable } from "node:stream";
import { createLogger } from "../../../src/log";
import {
  failuresAfter,
  LISTENER_SCHEDULE,
  PIPELINE_SCHEDULE,
  REMOTE_SCHEDULE,
  RestartLoop,
  restartDelayMs,
  type RestartKind,
  type RestartSchedule,
  type RestartTimers,
} from "../../../src/media/restarts";

describe("restartDelayMs", () => {
  it.each([
    // [schedule, failures in a row, wait]
    ["remote", REMOTE_SCHEDULE, 1, 1_000],
    ["remote", REMOTE_SCHEDULE, 2, 2_000],
    ["remote", REMOTE_SCHEDULE, 5, 16_000],
    ["remote", REMOTE_SCHEDULE, 6, 30_000],
    ["remote", REMOTE_SCHEDULE, 2000, 30_000], // 2 ** 1999 is Infinity: still capped
    ["remote", REMOTE_SCHEDULE, 0, 1_000],
    ["listener", LISTENER_SCHEDULE, 1, 200],
    ["listener", LISTENER_SCHEDULE, 6, 6_400],
    ["listener", LISTENER_SCHEDULE, 7, 10_000],
    ["pipeline", PIPELINE_SCHEDULE, 1, 500],
    ["pipeline", PIPELINE_SCHEDULE, 3, 2_000],
  ] as Array<[string, RestartSchedule, number, number]>)("%s after %i failures: %i ms", (_name, schedule, failures, wait) => {
    expect(restartDelayMs(failures, schedule)).toBe(wait);
  });
});

describe("failuresAfter", () => {
  it.each([
    // [previous failures, ran for (ms), failures now]
    [0, undefined, 1],
    [3, undefined, 4],
    [3, 2_000, 4], // accepted then dropped at once: keep backing off
    [3, REMOTE_SCHEDULE.stableMs - 1, 4],
    [5, REMOTE_SCHEDULE.stableMs, 1], // had recovered: start over
    [5, 3_600_000, 1],
  ])("failuresAfter(%i, %s) = %i", (previous, ranFor, expected) => {
    expect(failuresAfter(previous, ranFor, REMOTE_SCHEDULE)).toBe(expected);
  });
});

/** Timers stepped by hand, and the log lines and metrics a loop wrote. */
function harness(schedule: RestartSchedule) {
  let now = 0;
  const due: Array<{ at: number; fn: () => void } | undefined> = [];
  const timers: RestartTimers = {
    now: () => now,
    setTimeout: (fn, ms) => due.push({ at: now + ms, fn }) - 1,
    clearTimeout: (h) => void (due[h as number] = undefined),
  };
  const lines: Array<{ level: number; msg: string; retryInMs?: number; failuresInARow?: number }> = [];
  const log = createLogger("info", new Writable({ write: (chunk: Buffer, _e, cb) => (lines.push(JSON.parse(chunk.toString())), cb()) }));
  const counted: Array<[RestartKind, string]> = [];
  const loop = new RestartLoop({ kind: "pull", what: "pull", schedule, log, timers, metrics: { counted: (k, o) => counted.push([k, o]) } });
  const advance = (ms: number) => {
    now += ms;
    due.forEach((t, i) => {
      if (t && t.at <= now) {
        due[i] = undefined;
        t.fn();
      }
    });
  };
  return { loop, lines, counted, advance, pending: () => due.filter(Boolean).length };
}

describe("RestartLoop", () => {
  it("backs off, runs the next attempt when due, and says so in one line each time", () => {
    const h = harness(REMOTE_SCHEDULE);
    let attempts = 0;
    const next = () => attempts++;
    expect(h.loop.failed("failed", next, { fields: { code: 1 } })).toBe(1_000);
    expect(h.loop.status()).toEqual({ failures: 1, retryAt: 1_000, lastProblem: "failed" });
    h.advance(999);
    expect(attempts).toBe(0);
    h.advance(1);
    expect(attempts).toBe(1);
    expect(h.loop.pending).toBe(false);
    expect(h.loop.failed("failed", next)).toBe(2_000);
    expect(h.lines.map((l) => [l.level, l.msg, l.retryInMs, l.failuresInARow])).toEqual([
      [40, "pull failed: retrying", 1_000, 1],
      [40, "pull failed: retrying", 2_000, 2],
    ]);
    expect(h.counted).toEqual([["pull", "retry"], ["pull", "retry"]]);
  });

  it("a run that lasted starts the count over", () => {
    const h = harness(REMOTE_SCHEDULE);
    h.loop.failed("failed", () => {});
    h.loop.failed("failed", () => {});
    expect(h.loop.failed("source ended", () => {}, { ranForMs: 60_000 })).toBe(1_000);
    expect(h.loop.failures).toBe(1);
  });

  it("gives up after maxFailures, or at once on a permanent failure, with nothing scheduled", () => {
    const h = harness(PIPELINE_SCHEDULE);
    expect([1, 2, 3, 4].map(() => h.loop.failed("exited", () => {}))).toEqual([500, 1_000, 2_000, undefined]);
    expect(h.pending()).toBe(0);
    expect(h.lines.at(-1)).toMatchObject({ level: 50, msg: "pull exited: giving up", failuresInARow: 4 });
    const p = harness(REMOTE_SCHEDULE);
    expect(p.loop.failed("refused the key", () => {}, { permanent: true })).toBeUndefined();
    expect(p.counted).toEqual([["pull", "gave_up"]]);
  });

  it("an expected end is logged at info and does not raise the count", () => {
    const h = harness(REMOTE_SCHEDULE);
    h.loop.failed("failed", () => {});
    expect(h.loop.failed("input ended", () => {}, { expected: true })).toBe(1_000);
    expect(h.loop.failures).toBe(1);
    expect(h.lines.at(-1)).toMatchObject({ level: 30, msg: "pull input ended: retrying" });
  });

  it("now() skips the wait and starts over; cancel() drops the pending attempt", () => {
    const h = harness(REMOTE_SCHEDULE);
    let attempts = 0;
    h.loop.failed("failed", () => attempts++);
    h.loop.failed("failed", () => attempts++);
    h.loop.now(() => attempts++);
    expect(attempts).toBe(1);
    expect(h.loop.failures).toBe(0);
    h.advance(60_000);
    expect(attempts).toBe(1); // the replaced timers never fire
    h.loop.failed("failed", () => attempts++);
    h.loop.cancel();
    h.advance(60_000);
    expect(attempts).toBe(1);
    expect(h.loop.status().retryAt).toBeUndefined();
  });
});
