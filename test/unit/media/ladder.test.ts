import { even, loadLadder, renditionLadder } from "../../../src/media/ladder";

const P = (name: string, width: number, height: number, fps = 30, bitrate = 1_000_000) => ({ name, width, height, fps, bitrate });

describe("renditionLadder", () => {
  it("no profiles: one passthrough rendition", () => {
    expect(renditionLadder([], 2)).toEqual([{ index: 0, name: "source", encode: null }]);
  });

  it.each([
    ["a plain source (track 0 only)", [0], [{ index: 0, name: "source", encode: null }]],
    ["no tracks known: the source", [], [{ index: 0, name: "source", encode: null }]],
    [
      "an encoder's ladder: one rendition per track, the default first",
      [0, 1, 2],
      [
        { index: 0, name: "source", encode: null },
        { index: 1, name: "source track 1", encode: null, track: 1 },
        { index: 2, name: "source track 2", encode: null, track: 2 },
      ],
    ],
  ] as const)("no profiles, %s", (_name, tracks, expected) => {
    expect(renditionLadder([], 2, tracks)).toEqual(expected);
  });

  it("profiles: the source's tracks do not change the ladder (track 0 is transcoded)", () => {
    expect(renditionLadder([P("720p", 1280, 720)], 2, [0, 1, 2]).map((r) => [r.name, r.track])).toEqual([["720p", undefined]]);
  });

  it("one rendition per profile, even sizes, a GOP of one segment", () => {
    const r = renditionLadder([P("720p", 1280, 720), P("odd", 853, 481, 25, 500_000)], 2);
    expect(r.map((x) => x.name)).toEqual(["720p", "odd"]);
    expect(r[0]!.encode).toEqual({ width: 1280, height: 720, fps: 30, bitrate: 1_000_000, gopFrames: 60 });
    expect(r[1]!.encode).toEqual({ width: 852, height: 480, fps: 25, bitrate: 500_000, gopFrames: 50 });
    expect(even(1)).toBe(2);
  });

  it("the default ladder is 720p, 480p, 360p", () => {
    expect(loadLadder("default").map((p) => [p.name, p.width, p.height])).toEqual([
      ["720p", 1280, 720],
      ["480p", 854, 480],
      ["360p", 640, 360],
    ]);
    expect(() => loadLadder("../etc/passwd")).toThrow(/invalid ladder name/);
  });
});
