import { dvrCutIssue, planDvrWindows, type DvrNeed } from "../../../src/sessions/dvrRoom";

const MB = 1_000_000;
const need = (asked: number, listed: number, bytesPerSecond: number): DvrNeed => ({ asked, listed, bytesPerSecond });

describe("planDvrWindows", () => {
  it.each<[string, DvrNeed[], number, number[]]>([
    ["no sessions", [], 0, []],
    ["room for every whole window", [need(7200, 60, 1 * MB), need(600, 600, 1 * MB)], 7140 * MB, [7200, 600]],
    ["a window already full needs no room", [need(600, 600, 1 * MB)], 0, [600]],
    ["one window: it grows by what the room holds", [need(7200, 100, 1 * MB)], 500 * MB, [600]],
    ["two windows short of room share it in seconds, not bytes", [need(7200, 100, 1 * MB), need(7200, 100, 3 * MB)], 400 * MB, [200, 200]],
    ["a small window that fits is kept whole, the rest share what it leaves", [need(200, 100, 1 * MB), need(7200, 100, 1 * MB)], 1100 * MB, [200, 1100]],
    ["no room: each keeps what it lists", [need(7200, 300, 1 * MB), need(7200, 100, 1 * MB)], 0, [300, 100]],
    ["less than no room: each gives back the same seconds", [need(7200, 300, 1 * MB), need(7200, 100, 1 * MB)], -100 * MB, [250, 50]],
    ["never below nothing", [need(7200, 30, 1 * MB)], -1000 * MB, [0]],
    ["a session with no media yet keeps its asked window", [need(7200, 0, 0), need(7200, 100, 1 * MB)], 100 * MB, [7200, 200]],
    ["whole seconds, rounded down", [need(7200, 10.5, 1 * MB)], 2.2 * MB, [12]],
  ])("%s", (_name, needs, room, windows) => {
    expect(planDvrWindows(needs, room)).toEqual(windows);
  });
});

describe("dvrCutIssue", () => {
  it("says what was kept, what was asked, the room and what to do", () => {
    expect(dvrCutIssue(600, 7200, 900 * 1024 * 1024, 80 * 1024 * 1024)).toBe(
      "DVR window cut to 600 s of the 7200 s asked: the data directory has 900 MiB free and keeps 80 MiB for live sessions (STORAGE_MIN_FREE_MB and a margin); free disk space or lower dvrWindow",
    );
  });
});
