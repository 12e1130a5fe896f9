import { dvrWindow, dvrWindowSeconds, MAX_DVR_WINDOW_SECONDS } from "../../../src/shapes";

describe("dvrWindowSeconds", () => {
  it("is the stream's own window when it has one, 0 included", () => {
    expect(dvrWindowSeconds(120, 600)).toBe(120);
    expect(dvrWindowSeconds(0, 600)).toBe(0);
    expect(dvrWindowSeconds(MAX_DVR_WINDOW_SECONDS, 0)).toBe(21_600);
  });

  it("is the server's default for a stream without one", () => {
    expect(dvrWindowSeconds(null, 600)).toBe(600);
    expect(dvrWindowSeconds(undefined, 0)).toBe(0);
  });
});

describe("the dvrWindow field", () => {
  it("takes whole seconds from 0 to 6 hours, and null", () => {
    for (const ok of [0, 1, 3600, 21_600, null]) expect(dvrWindow.parse(ok)).toBe(ok);
  });

  it.each([
    [-1, "must be at least 0"],
    [1.5, "must be a whole number of seconds"],
    [21_601, "must be at most 21600 seconds"],
    ["x", "must be a number"],
  ])("refuses %j: %s", (value, message) => {
    const r = dvrWindow.safeParse(value);
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.message).toMatch(message);
  });
});
