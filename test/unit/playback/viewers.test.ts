import { ViewerCounter, WEBRTC_VIEWER_PREFIX, type ViewerCount } from "../../../src/playback/viewers";

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

  // WebRTC playback tells its viewers as `webrtc-<id>`; every other id is an HLS player session.
  const w = (id: string) => `${WEBRTC_VIEWER_PREFIX}${id}`;
  type ProtocolStep = ["seen", string, string, number] | ["counts", number, Record<string, ViewerCount>];
  it.each<[string, ProtocolStep[]]>([
    [
      "WebRTC and HLS viewers of one playback id: all counted, WebRTC's apart",
      [["seen", "p1", w("a"), 0], ["seen", "p1", w("b"), 0], ["seen", "p1", "hls1", 0], ["counts", 0, { p1: { viewers: 3, webrtc: 2 } }]],
    ],
    ["HLS only: no WebRTC viewers", [["seen", "p1", "hls1", 0], ["counts", 0, { p1: { viewers: 1, webrtc: 0 } }]]],
    [
      "a WebRTC viewer seen again (every 5 s) counts once",
      [["seen", "p1", w("a"), 0], ["seen", "p1", w("a"), 5_000], ["seen", "p1", w("a"), 10_000], ["counts", 10_000, { p1: { viewers: 1, webrtc: 1 } }]],
    ],
    [
      "per playback id: a WebRTC viewer of one is not one of the other",
      [["seen", "p1", w("a"), 0], ["seen", "p2", "hls1", 0], ["counts", 0, { p1: { viewers: 1, webrtc: 1 }, p2: { viewers: 1, webrtc: 0 } }]],
    ],
    [
      "a WebRTC viewer that stops being told leaves the WebRTC count with the total; the HLS one stays",
      [["seen", "p1", w("a"), 0], ["seen", "p1", "hls1", 10_000], ["counts", 30_000, { p1: { viewers: 1, webrtc: 0 } }], ["seen", "p1", w("b"), 31_000], ["counts", 31_000, { p1: { viewers: 2, webrtc: 1 } }]],
    ],
    ["the prefix must start the id", [["seen", "p1", `x${w("a")}`, 0], ["seen", "p1", "webrtc", 0], ["counts", 0, { p1: { viewers: 2, webrtc: 0 } }]]],
  ])("by protocol: %s", (_name, steps) => {
    const counter = new ViewerCounter({ windowMs: 30_000 });
    for (const step of steps) {
      if (step[0] === "seen") counter.seen(step[1], step[2], step[3]);
      else {
        const byProtocol = counter.countsByProtocol(step[1]);
        expect(Object.fromEntries(byProtocol)).toEqual(step[2]);
        // The totals are the same by either count.
        expect(Object.fromEntries(counter.counts(step[1]))).toEqual(Object.fromEntries([...byProtocol].map(([id, c]) => [id, c.viewers])));
      }
    }
  });

  it("by protocol: expiry under the caps keeps the WebRTC count right", () => {
    const counter = new ViewerCounter({ windowMs: 30_000, maxPerPlayback: 4 });
    for (const id of [w("a"), w("b"), "hls1", "hls2"]) counter.seen("p1", id, 0);
    // Full: a new WebRTC viewer waits until the first ones expire and make room.
    counter.seen("p1", w("c"), 10_000);
    expect(Object.fromEntries(counter.countsByProtocol(10_000))).toEqual({ p1: { viewers: 4, webrtc: 2 } });
    counter.seen("p1", "hls1", 20_000);
    counter.seen("p1", w("c"), 30_000);
    expect(Object.fromEntries(counter.countsByProtocol(30_000))).toEqual({ p1: { viewers: 2, webrtc: 1 } });
    expect(counter.tracked).toBe(2);
  });

  it("says whether a viewer is still watching: seen within the window", () => {
    const counter = new ViewerCounter({ windowMs: 30_000 });
    counter.seen("p1", "a", 0);
    expect(counter.watching("p1", "a", 29_999)).toBe(true);
    expect(counter.watching("p1", "a", 30_000)).toBe(false);
    expect(counter.watching("p1", "b", 0)).toBe(false);
    expect(counter.watching("p2", "a", 0)).toBe(false);
  });
});
