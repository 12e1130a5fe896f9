import { SpeedMeter } from "../../../src/sessions/speedMeter";

describe("SpeedMeter", () => {
  it.each([
    ["keeps up", [[0, 0, 0], [10_000, 10, 10]], 1],
    ["at half speed", [[0, 0, 0], [10_000, 10, 5]], 0.5],
    // The publisher's uplink is slow: input and output advance alike, the transcode is fine.
    ["a slow source is not a slow transcode", [[0, 0, 0], [10_000, 4, 4]], 1],
    ["nothing received yet", [[0, 0, 0], [10_000, 0, 0]], undefined],
  ] as const)("%s", (_name, samples, expected) => {
    const m = new SpeedMeter(30_000);
    for (const [at, input, output] of samples) m.add(at, input, output);
    expect(m.ratio()).toBe(expected);
  });

  it("forgets what is older than its window, and starts over on reset", () => {
    const m = new SpeedMeter(10_000);
    m.add(0, 0, 0);
    m.add(10_000, 10, 2); // slow at first
    m.add(20_000, 20, 12); // then real time
    m.add(25_000, 25, 17);
    expect(m.ratio()).toBe(1);
    expect(m.span()).toBe(15_000);
    m.reset();
    expect(m.ratio()).toBeUndefined();
    expect(m.span()).toBe(0);
  });
});
