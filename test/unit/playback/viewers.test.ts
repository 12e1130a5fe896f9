import { ViewerCounter } from "../../../src/playback/viewers";

// Concurrent viewers from playlist requests, with explicit times: a viewer counts while seen
// within the window, and memory stays bounded whatever ids clients make up.

type Step = ["seen", string, string, number] | ["counts", number, Record<string, number>];

describe("ViewerCounter", () => {
  it.each<[string, Step[]]>([
    ["nobody seen: no counts", [["counts", 0, {}]]],
    [
      "three viewers of one playback id, one of them seen twice",
      [["seen", "p1", "a", 0], ["seen", "p1", "b", 1_000], ["seen", "p1", "a", 2_000], ["seen", "p1", "c", 3_000], ["counts", 3_000, { p1: 3 }]],
    ],
    [
      "viewers of two playback ids are counted apart; one viewer id may watch both",
      [["seen", "p1", "a", 0], ["seen", "p2", "a", 0], ["seen", "p2", "b", 0], ["counts", 0, { p1: 1, p2: 2 }]],
    ],
    [
      "a viewer counts until 30 s after its last request, not 30 s after its first",
      [["seen", "p1", "a", 0], ["seen", "p1", "a", 20_000], ["counts", 49_999, { p1: 1 }], ["counts", 50_000, {}]],
    ],
    [
      "viewers leave one by one as their windows end",
      [["seen", "p1", "a", 0], ["seen", "p1", "b", 10_000], ["counts", 29_999, { p1: 2 }], ["counts", 30_000, { p1: 1 }], ["counts", 40_000, {}]],
    ],
    [
      "a viewer who comes back after leaving counts again",
      [["seen", "p1", "a", 0], ["counts", 31_000, {}], ["seen", "p1", "a", 32_000], ["counts", 32_000, { p1: 1 }]],
    ],
    [
      "empty and overlong ids are not tracked",
      [["seen", "", "a", 0], ["seen", "p1", "", 0], ["seen", "p1", "x".repeat(129), 0], ["seen", "p".repeat(129), "a", 0], ["seen", "p1", "x".repeat(128), 0], ["counts", 0, { p1: 1 }]],
    ],
  ])("%s", (_name, steps) => {
    const counter = new ViewerCounter({ windowMs: 30_000 });
    for (const step of steps) {
      if (step[0] === "seen") counter.seen(step[1], step[2], step[3]);
      else expect(Object.fromEntries(counter.counts(step[1]))).toEqual(step[2]);
    }
  });

  it("forgets expired viewers as it counts: memory follows the viewers present", () => {
    const counter = new ViewerCounter({ windowMs: 30_000 });
    for (let i = 0; i < 1_000; i++) counter.seen(`p${i % 10}`, `v${i}`, 0);
    expect(counter.tracked).toBe(1_000);
    counter.seen("p0", "late", 20_000);
    expect(Object.fromEntries(counter.counts(40_000))).toEqual({ p0: 1 });
    expect(counter.tracked).toBe(1);
  });

  it("caps viewers per playback id: a flood of made-up ids saturates the count, real viewers already in stay", () => {
    const counter = new ViewerCounter({ windowMs: 30_000, maxPerPlayback: 100 });
    counter.seen("p1", "real", 0);
    for (let i = 0; i < 10_000; i++) counter.seen("p1", `fake${i}`, 1_000);
    counter.seen("p2", "other", 1_000);
    expect(Object.fromEntries(counter.counts(1_000))).toEqual({ p1: 100, p2: 1 });
    expect(counter.tracked).toBe(101);
    // The real viewer keeps being seen; once the fakes' window ends, new viewers fit again.
    counter.seen("p1", "real", 20_000);
    counter.seen("p1", "new", 31_000);
    expect(Object.fromEntries(counter.counts(31_000))).toEqual({ p1: 2 });
  });

  it("caps viewers in all, across playback ids", () => {
    const counter = new ViewerCounter({ windowMs: 30_000, maxTotal: 50 });
    for (let i = 0; i < 1_000; i++) counter.seen(`p${i}`, "v", 0);
    expect(counter.tracked).toBe(50);
    expect(counter.counts(0).size).toBe(50);
    // Expired entries make room for new ones.
    counter.seen("late", "v", 30_000);
    expect(Object.fromEntries(counter.counts(30_000))).toEqual({ late: 1 });
  });
});
