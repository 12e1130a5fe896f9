// The player's live target (public/latencyTarget.js): plain browser JavaScript, loaded here as
// the CommonJS module it also is.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { create, playbackRate } = require("../../../public/latencyTarget.js") as {
  create(partTarget: number, now: number): Target;
  playbackRate(behind: number, rate: number, room: number, rtt?: number): number;
};

interface Target {
  target: number;
  need(): number;
  rtt(): number;
  setPartTarget(seconds: number): void;
  observeRtt(seconds: number): void;
  playing(at: number): void;
  observeHeadroom(seconds: number, at: number, latency?: number): void;
  stalled(at: number): void;
  tick(at: number): number;
}

/**
 * Plays `seconds` of 0.2 s parts, each taking `used` s of the target to arrive (the rest is the
 * headroom left in the buffer).
 */
function play(t: Target, from: number, seconds: number, used: number): number {
  let at = from;
  for (; at < from + seconds * 1000; at += 100) {
    if (at % 200 === 0) t.observeHeadroom(t.target - used, at);
    t.tick(at);
  }
  return at;
}

const close = (a: number, b: number) => Math.abs(a - b) < 1e-9;

describe("live latency target", () => {
  it("starts a little behind what the network needs, and follows the part length", () => {
    const t = create(0.2, 0);
    expect(close(t.target, 0.8)).toBe(true);
    t.setPartTarget(0.5);
    expect(close(t.target, 1.25 + 0.3)).toBe(true);
    // A far viewer: two round trips of 0.15 s per part push the start back before playback.
    const far = create(0.2, 0);
    for (let i = 0; i < 5; i++) far.observeRtt(0.15);
    expect(close(far.rtt(), 0.15)).toBe(true);
    expect(close(far.need(), 0.2 + 0.3 + 0.1)).toBe(true);
    expect(close(far.target, 0.6 + 0.3)).toBe(true);
  });

  it("ignores nonsense round trips (none measured, or longer than any request)", () => {
    const t = create(0.2, 0);
    for (const rtt of [-1, NaN, 60]) t.observeRtt(rtt);
    expect(t.rtt()).toBe(0);
    expect(close(t.target, 0.8)).toBe(true);
  });

  it("closes in to the floor (2.5 parts, today's 0.5 s) while the buffer has room, and no further", () => {
    const t = create(0.2, 0);
    t.playing(0);
    const at = play(t, 0, 5, 0.2);
    expect(t.target).toBeLessThan(0.8);
    expect(t.target).toBeGreaterThan(0.5);
    play(t, at, 30, 0.2);
    expect(close(t.target, 0.5)).toBe(true);
  });

  it("closes in no further than the most a part took of the target lately, plus a margin", () => {
    const t = create(0.2, 0);
    t.playing(0);
    play(t, 0, 60, 0.33);
    expect(close(t.target, 0.53)).toBe(true);
  });

  it("does not move before playback starts, nor close in while headroom is low", () => {
    const t = create(0.2, 0);
    for (let at = 0; at < 20_000; at += 100) {
      t.observeHeadroom(0.01, at);
      t.tick(at);
    }
    expect(close(t.target, 0.8)).toBe(true);
    t.playing(20_000);
    play(t, 20_000, 30, 0.68);
    expect(close(t.target, 0.8)).toBe(true);
  });

  it("moves back at once when the buffer nearly runs dry, holds 8 s, then closes in again", () => {
    const t = create(0.2, 0);
    t.playing(0);
    let at = play(t, 0, 40, 0.2);
    expect(close(t.target, 0.5)).toBe(true);
    // Two low appends of one late part (audio and video): one raise.
    t.observeHeadroom(0.02, at);
    t.observeHeadroom(0.03, at + 50);
    expect(close(t.target, 0.6)).toBe(true);
    at = play(t, at + 100, 7, 0.2);
    expect(close(t.target, 0.6)).toBe(true);
    play(t, at, 30, 0.2);
    expect(close(t.target, 0.5)).toBe(true);
  });

  it("a stall moves back more than a low buffer, and more for each stall of the last minute", () => {
    const t = create(0.2, 0);
    t.playing(0);
    let at = play(t, 0, 40, 0.2);
    // The buffer runs low, then stalls: one trouble, the larger raise counts.
    t.observeHeadroom(0.01, at);
    t.stalled(at + 500);
    expect(close(t.target, 0.65)).toBe(true);
    at = play(t, at + 600, 7, 0.1);
    expect(close(t.target, 0.65)).toBe(true);
    // Back in once the late part is 30 s old (until then: no closer than it took, plus 0.2 s).
    at = play(t, at, 30, 0.1);
    expect(close(t.target, 0.5)).toBe(true);
    // A second stall within the minute: twice the step.
    t.stalled(at);
    expect(close(t.target, 0.8)).toBe(true);
    // A minute later the count starts over.
    at = play(t, at + 100, 70, 0.1);
    expect(close(t.target, 0.5)).toBe(true);
    t.stalled(at);
    expect(close(t.target, 0.65)).toBe(true);
  });

  it("does not close in on old samples while no part arrives (a late part, a pause)", () => {
    const t = create(0.2, 0);
    t.playing(0);
    play(t, 0, 4, 0.2);
    for (let at = 4000; at < 5000; at += 100) t.tick(at);
    const before = t.target;
    for (let at = 5000; at < 10_000; at += 100) t.tick(at);
    expect(t.target).toBe(before);
  });

  it("counts what a part took against the latency played at, when the player knows it", () => {
    const t = create(0.2, 0);
    t.playing(0);
    // Caught up after the start, then at the target (0.8) by its own account, but really 1.2
    // behind with 0.3 buffered: 0.9 used.
    t.observeHeadroom(0.5, 0, 0.8);
    for (let at = 200; at < 20_000; at += 200) {
      t.observeHeadroom(0.3, at, 1.2);
      t.tick(at);
    }
    expect(t.target).toBeCloseTo(0.8, 5);
  });

  it("never moves past the ceiling, whatever the round trip", () => {
    const far = create(0.2, 0);
    for (let i = 0; i < 20; i++) far.observeRtt(9);
    expect(far.need()).toBe(4);
    expect(far.target).toBe(4);
    const t = create(0.2, 0);
    t.playing(0);
    for (let i = 0; i < 50; i++) t.stalled(i * 3000);
    expect(t.target).toBe(4);
    expect(far.tick(0)).toBe(4);
  });

  it("does not count the start's catch-up as parts arriving late: closes in once caught up", () => {
    const t = create(0.2, 0);
    t.playing(0);
    // Started 3 s behind with little buffered (the backlog still coming a part at a time), then
    // caught up by playing faster: 0.1 s of buffer lost at each part.
    let behind = 3;
    let at = 0;
    for (; behind > 0.8; at += 200, behind -= 0.1) {
      t.observeHeadroom(0.3, at, behind);
      t.tick(at);
    }
    play(t, at, 15, 0.2);
    expect(t.target).toBeLessThan(0.6);
    // Had the catch-up counted, 2.7 s "used" would have held it at 0.8 for half a minute.
  });

  it("takes the round trip from the quicker requests: a start's new connections pay a handshake more", () => {
    const t = create(0.2, 0);
    for (const rtt of [0.16, 0.16, 0.16, 0.16, 0.08, 0.08, 0.08, 0.08]) t.observeRtt(rtt);
    expect(close(t.rtt(), 0.08)).toBe(true);
  });

  // A viewer far away: a part arrives a round trip and a half after it is complete when hls.js
  // asks for it once a blocking reload lists it (half a round trip when the player took it from
  // the preload hint), give or take a jitter of 0.05 s either way.
  it.each([
    // round trip (s), where the start is, the least headroom allowed, where it ends up
    [0.08, 0.8, 0.08, 0.6],
    [0.15, 0.9, 0.08, 0.7],
  ])("a viewer %p s away starts at %p s, never runs the buffer under %p s while closing in, and ends under %p s", (rtt, start, least, end) => {
    const t = create(0.2, 0);
    // The start's requests, half of them on new connections.
    for (let i = 0; i < 8; i++) t.observeRtt(i % 2 ? rtt : 2 * rtt);
    expect(close(t.target, start)).toBe(true);
    t.playing(0);
    let lowest = Infinity;
    for (let at = 0; at < 90_000; at += 100) {
      if (at % 200 === 0) {
        const used = 0.2 + 1.5 * rtt + 0.05 * Math.sin(at / 700);
        lowest = Math.min(lowest, t.target - used);
        t.observeHeadroom(t.target - used, at);
      }
      t.tick(at);
    }
    expect(lowest).toBeGreaterThan(least);
    expect(t.target).toBeLessThan(end);
    // Closed in: as close as the parts' lateness and the margin let it.
    expect(t.target).toBeGreaterThan(0.2 + 1.5 * rtt + 0.05 + 0.2 - 0.01);
  });

  it("never holds less than one part and two round trips, however calm the buffer", () => {
    const t = create(0.2, 0);
    t.playing(0);
    play(t, 0, 40, 0.2);
    for (let i = 0; i < 20; i++) t.observeRtt(0.2);
    expect(close(t.tick(40_000), 0.2 + 0.4 + 0.1)).toBe(true);
  });
});

describe("playback rate toward the target", () => {
  it.each([
    // behind (s), rate now, rate
    [0, 1, 1],
    [0.04, 1, 1], // within the dead band: stays
    [0.06, 1, 1.05],
    [0.3, 1, 1.21],
    [2, 1, 1.5],
    [0.03, 1.2, 1.05], // catching up goes on until 0.02 s
    [0.01, 1.2, 1],
    [-0.04, 1, 1],
    [-0.11, 1, 0.923],
    [-1, 1, 0.9],
    [-0.03, 0.93, 0.95], // slowing down goes on until 0.02 s ahead
    [-0.01, 0.93, 1],
    [0.3, 1, 1, 0.1], // too little buffered to speed up: into a stall
    [0.3, 1.2, 1, 0.1],
    // Far away the next part is up to two round trips off: speeding up needs that much more room.
    [0.3, 1, 1, 0.4, 0.15],
    [0.3, 1, 1.21, 0.5, 0.15],
    [0.3, 1, 1.21, 0.4, 0.08],
  ])("%p s behind at %px → %px (buffered: %p s, round trip %p s)", (behind, rate, expected, room = 1, rtt = 0) => {
    expect(playbackRate(behind, rate, room, rtt)).toBeCloseTo(expected, 3);
  });
});
