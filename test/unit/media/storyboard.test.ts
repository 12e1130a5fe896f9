import { buildSpriteArgs, buildTileArgs, jpegSize, renderStoryboardVtt, spriteGrid, takesTile, tilePosition, trimTiles, vttTime, type Tile } from "../../../src/media/storyboard";

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const tile = (msn: number, atSeconds: number, duration = 5): Tile => ({ msn, programDateTime: T0 + atSeconds * 1000, duration });

describe("takesTile", () => {
  const cases: [string, number | undefined, number, boolean][] = [
    ["the first segment", undefined, T0, true],
    ["1 s after the last tile", T0, T0 + 1000, false],
    ["4.7 s after", T0, T0 + 4700, false],
    ["4.9 s after (segment durations are not exact)", T0, T0 + 4900, true],
    ["6 s after (2 s segments)", T0, T0 + 6000, true],
    ["before the last tile (the clock went back)", T0, T0 - 1000, true],
  ];
  test.each(cases)("%s", (_n, last, at, want) => expect(takesTile(last, at)).toBe(want));
});

describe("trimTiles", () => {
  const tiles = [tile(0, 0), tile(5, 5), tile(10, 10, 3)];
  const cases: [string, number, number, number[]][] = [
    ["all inside a long window", T0 + 13_000, 60, [0, 5, 10]],
    ["the first ends at the horizon: dropped", T0 + 13_000, 8, [5, 10]],
    ["partly inside: kept", T0 + 13_000, 9, [0, 5, 10]],
    ["a window shorter than the newest tile", T0 + 13_000, 1, [10]],
  ];
  test.each(cases)("%s", (_n, edge, window, kept) => {
    const r = trimTiles(tiles, edge, window);
    expect(r.kept.map((t) => t.msn)).toEqual(kept);
    expect(r.dropped.length + r.kept.length).toBe(3);
  });
  test("no tiles", () => expect(trimTiles([], T0, 5)).toEqual({ kept: [], dropped: [] }));
});

describe("spriteGrid and tilePosition", () => {
  const size = { width: 160, height: 90 };
  const cases: [number, number, { columns: number; rows: number }, { x: number; y: number }][] = [
    [0, 1, { columns: 1, rows: 1 }, { x: 0, y: 0 }],
    [2, 3, { columns: 3, rows: 1 }, { x: 320, y: 0 }],
    [9, 10, { columns: 10, rows: 1 }, { x: 1440, y: 0 }],
    [10, 11, { columns: 10, rows: 2 }, { x: 0, y: 90 }],
    [24, 25, { columns: 10, rows: 3 }, { x: 640, y: 180 }],
  ];
  test.each(cases)("tile %i of %i", (index, count, grid, at) => {
    expect(spriteGrid(count)).toEqual(grid);
    expect(tilePosition(index, count, size)).toEqual({ ...at, w: 160, h: 90 });
  });
});

describe("vttTime", () => {
  const cases: [number, string][] = [
    [0, "00:00:00.000"],
    [5.0004, "00:00:05.000"],
    [61.5, "00:01:01.500"],
    [3725.25, "01:02:05.250"],
    [-1, "00:00:00.000"],
  ];
  test.each(cases)("%s s", (s, want) => expect(vttTime(s)).toBe(want));
});

describe("renderStoryboardVtt", () => {
  const size = { width: 160, height: 90 };
  const cases: [string, Tile[], string][] = [
    ["no tiles", [], "WEBVTT\n"],
    [
      "one tile: its own duration",
      [tile(3, 0, 2.5)],
      ["WEBVTT", "", "NOTE program-date-time 2026-01-01T00:00:00.000Z", "", "00:00:00.000 --> 00:00:02.500", "storyboard.jpg#xywh=0,0,160,90", ""].join("\n"),
    ],
    [
      "cues end where the next begins; times from the first tile",
      [tile(7, 10), tile(12, 15), tile(17, 21, 4)],
      [
        "WEBVTT", "", "NOTE program-date-time 2026-01-01T00:00:10.000Z", "",
        "00:00:00.000 --> 00:00:05.000", "storyboard.jpg#xywh=0,0,160,90", "",
        "00:00:05.000 --> 00:00:11.000", "storyboard.jpg#xywh=160,0,160,90", "",
        "00:00:11.000 --> 00:00:15.000", "storyboard.jpg#xywh=320,0,160,90", "",
      ].join("\n"),
    ],
  ];
  test.each(cases)("%s", (_n, tiles, want) => expect(renderStoryboardVtt(tiles, size)).toBe(want));
  test("the eleventh tile starts the second row", () => {
    const vtt = renderStoryboardVtt(Array.from({ length: 11 }, (_, i) => tile(i * 5, i * 5)), size);
    expect(vtt).toContain("00:00:50.000 --> 00:00:55.000\nstoryboard.jpg#xywh=0,90,160,90");
  });
});

describe("ffmpeg arguments", () => {
  test("a tile decodes the first keyframe of the piped segment", () => {
    const args = buildTileArgs("/d/storyboard/7.jpg").join(" ");
    expect(args).toContain("-skip_frame nokey -f mov -i pipe:0");
    expect(args).toContain("-frames:v 1 -vf scale=w='min(160,iw)':h=-2");
    expect(args.endsWith("-f image2 /d/storyboard/7.jpg")).toBe(true);
  });
  const cases: [number, string][] = [
    [1, "tile=1x1"],
    [4, "tile=4x1"],
    [23, "tile=10x3"],
  ];
  test.each(cases)("a sprite of %i tiles", (count, grid) => {
    const args = buildSpriteArgs({ list: "/d/l.ffconcat", count, size: { width: 160, height: 90 }, output: "/d/s.jpg" }).join(" ");
    expect(args).toContain("-f concat -safe 0 -i /d/l.ffconcat");
    expect(args).toContain(`scale=160:90,setsar=1,${grid} -frames:v 1`);
  });
});

describe("jpegSize", () => {
  // SOI, an APP0 of 4 bytes, then SOF0 (height 90, width 160).
  const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x5a, 0x00, 0xa0, 0x03]);
  const cases: [string, Buffer, { width: number; height: number } | undefined][] = [
    ["after an APP0", jpeg, { width: 160, height: 90 }],
    ["cut short", jpeg.subarray(0, 10), undefined],
    ["not a JPEG's markers", Buffer.from("not a jpeg at all, really"), undefined],
  ];
  test.each(cases)("%s", (_n, bytes, want) => expect(jpegSize(bytes)).toEqual(want));
});
