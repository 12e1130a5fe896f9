import { defaultTranscodeBudget, ladderCost, refuseForCapacity } from "../../../src/sessions/capacity";

describe("capacity", () => {
  const ladder = [
    { width: 1280, height: 720, fps: 30 },
    { width: 854, height: 480, fps: 30 },
    { width: 640, height: 360, fps: 30 },
  ];
  it("costs output megapixels per second; passthrough costs nothing", () => {
    expect(ladderCost(ladder)).toBeCloseTo(46.82, 1);
    expect(ladderCost([])).toBe(0);
  });
  it.each([
    [0, 100, undefined],
    [46.8, 100, undefined],
    [60, 100, "server at capacity"],
  ])("with %s used of %s: %s", (used, budget, refusal) => {
    const r = refuseForCapacity(ladderCost(ladder), used, budget);
    if (refusal) expect(r).toContain(refusal);
    else expect(r).toBeUndefined();
  });
  it("a passthrough stream fits even on a full server", () => {
    expect(refuseForCapacity(0, 1000, 100)).toBeUndefined();
  });
  it("the default budget grows with the cores", () => {
    expect(defaultTranscodeBudget(2)).toBe(2 * defaultTranscodeBudget(1));
  });
});
