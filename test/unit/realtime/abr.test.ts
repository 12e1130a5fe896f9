import { chooseRung, KEEP_HEADROOM, LOSS_DOWN_EVERY_MS, LOSS_HIGH, LOSS_LIFT_AFTER_MS, LOSS_LOW, LOSS_UP_EVERY_MS, lossEstimate, lossLimitLifts, lossStepDue, UP_HEADROOM, type Rung } from "../../../src/realtime/abr";

// A 720p / 480p / 360p ladder, index 0 the highest, as renditionLadder orders the default one.
const LADDER: Rung[] = [
  { index: 0, bitrate: 3_000_000 },
  { index: 1, bitrate: 1_500_000 },
  { index: 2, bitrate: 600_000 },
];

describe("chooseRung", () => {
  it("keeps more headroom to go up than to stay", () => {
    expect(KEEP_HEADROOM).toBeGreaterThan(1);
    expect(UP_HEADROOM).toBeGreaterThan(KEEP_HEADROOM);
  });

  // Thresholds with these headrooms: staying on 0 needs 3.45 Mb/s, going up to it 4.5; staying on
  // 1 needs 1.725, going up to it 2.25; staying on 2 needs 0.69.
  it.each<[string, number, number, number | undefined, number]>([
    ["start: the highest that fits with the keeping headroom", 4_000_000, 0, undefined, 0],
    ["start: one below when the top does not fit", 3_400_000, 0, undefined, 1],
    ["start: the lowest on a low estimate", 1_000_000, 0, undefined, 2],
    ["start: a current index not in the ladder counts as none", 4_000_000, 0, 7, 0],
    ["stays on the top while the estimate carries it", 3_500_000, 0, 0, 0],
    ["down from the top when the estimate falls", 3_000_000, 0, 0, 1],
    ["down two when it falls further", 1_200_000, 0, 0, 2],
    ["down from the middle", 1_700_000, 0, 1, 2],
    ["no up-switch on a small rise (what a start would take)", 4_000_000, 0, 1, 1],
    ["no up-switch just under the up headroom", 4_499_000, 0, 1, 1],
    ["up when the estimate is clearly above", 4_600_000, 0, 1, 0],
    ["up from the bottom to the middle, not further", 2_300_000, 0, 2, 1],
    ["up from the bottom straight to the top", 5_000_000, 0, 2, 0],
    ["no up-switch from the bottom on a small rise", 2_000_000, 0, 2, 2],
    ["the lowest when nothing fits", 300_000, 0, 0, 2],
    ["the lowest when nothing fits at the start", 0, 0, undefined, 2],
    ["the audio's share is not the video's: start", 3_500_000, 96_000, undefined, 1],
    ["the audio's share is not the video's: staying", 3_500_000, 96_000, 0, 1],
    ["the audio's share is not the video's: going up", 4_550_000, 96_000, 1, 1],
    ["audio alone larger than the estimate", 50_000, 96_000, 1, 2],
  ])("%s", (_what, estimate, audio, current, expected) => {
    expect(chooseRung(LADDER, estimate, audio, current)).toBe(expected);
  });

  it("does not depend on the order the ladder is given in", () => {
    const shuffled = [LADDER[2]!, LADDER[0]!, LADDER[1]!];
    expect(chooseRung(shuffled, 4_000_000, 0, undefined)).toBe(0);
    expect(chooseRung(shuffled, 3_000_000, 0, 0)).toBe(1);
    expect(chooseRung(shuffled, 100_000, 0, 0)).toBe(2);
  });

  it("answers with the rung's index, not its place in the list", () => {
    const ladder: Rung[] = [{ index: 5, bitrate: 2_000_000 }, { index: 9, bitrate: 500_000 }];
    expect(chooseRung(ladder, 3_000_000, 0, undefined)).toBe(5);
    expect(chooseRung(ladder, 100_000, 0, undefined)).toBe(9);
  });

  it("refuses an empty ladder", () => {
    expect(() => chooseRung([], 1_000_000, 0, undefined)).toThrow("no renditions");
  });
});

describe("lossEstimate", () => {
  it.each<[string, number, number, number, number]>([
    ["no loss yet, none now: no limit", Infinity, 3_000_000, 0, Infinity],
    ["heavy loss cuts from what is sent, not from no limit", Infinity, 3_000_000, 0.2, 2_700_000],
    ["heavy loss cuts from the lower of the two", 2_000_000, 3_000_000, 0.5, 1_500_000],
    ["just past the high mark cuts", 1_000_000, 3_000_000, 0.11, 945_000],
    ["at the high mark: unchanged", 1_000_000, 3_000_000, LOSS_HIGH, 1_000_000],
    ["between the marks: unchanged", 1_000_000, 3_000_000, 0.05, 1_000_000],
    ["at the low mark: unchanged", 1_000_000, 3_000_000, LOSS_LOW, 1_000_000],
    ["under the low mark: climbs 5 %", 1_000_000, 3_000_000, 0.01, 1_050_000],
    ["total loss halves it", 1_000_000, 3_000_000, 1, 500_000],
  ])("%s", (_what, previous, sent, fraction, expected) => {
    expect(lossEstimate(previous, sent, fraction)).toBeCloseTo(expected, 3);
  });

  it.each<[string, number, number, number]>([
    ["a cut that would go under the floor stops there", 700_000, 0.5, 600_000],
    ["a cut above the floor is not raised", 2_000_000, 0.2, 1_800_000],
    ["the floor does not hold a climb back", 500_000, 0, 525_000],
  ])("with a floor: %s", (_what, previous, fraction, expected) => {
    expect(lossEstimate(previous, 3_000_000, fraction, 600_000)).toBeCloseTo(expected, 3);
  });

  it.each<[string, number, number, boolean]>([
    ["a cut is due 300 ms after the last step", 0.2, LOSS_DOWN_EVERY_MS, true],
    ["not sooner", 0.2, LOSS_DOWN_EVERY_MS - 1, false],
    ["a climb waits a second", 0, LOSS_UP_EVERY_MS - 1, false],
    ["and is due then", 0, LOSS_UP_EVERY_MS, true],
    ["loss between the marks never steps", 0.05, 10_000, false],
    ["the first report steps at once", 0.2, Infinity, true],
  ])("lossStepDue: %s", (_what, fraction, since, expected) => {
    expect(lossStepDue(fraction, since)).toBe(expected);
  });

  it.each<[string, number, number, boolean]>([
    ["a loss-free report after the loss-free stretch lifts the limit", 0, LOSS_LIFT_AFTER_MS, true],
    ["not before it", 0, LOSS_LIFT_AFTER_MS - 1, false],
    ["a report with loss never does", LOSS_LOW, Infinity, false],
    ["nor one with heavy loss", 0.3, Infinity, false],
  ])("lossLimitLifts: %s", (_what, fraction, since, expected) => {
    expect(lossLimitLifts(fraction, since)).toBe(expected);
  });

  it("steps a 3-rung viewer down under sustained loss and back up once it clears", () => {
    let limit = Infinity;
    let current = 0;
    for (let i = 0; i < 3; i++) {
      limit = lossEstimate(limit, LADDER.find((r) => r.index === current)!.bitrate, 0.3);
      current = chooseRung(LADDER, Math.min(10_000_000, limit), 0, current);
    }
    expect(current).toBe(2);
    for (let i = 0; i < 60; i++) {
      limit = lossEstimate(limit, LADDER.find((r) => r.index === current)!.bitrate, 0);
      current = chooseRung(LADDER, Math.min(10_000_000, limit), 0, current);
    }
    expect(current).toBe(0);
  });
});
