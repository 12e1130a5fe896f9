import { buildSpriteArgs, buildTileArgs, jpegSize, renderStoryboardVtt, spriteCapacity, spriteFile, spriteGrid, spriteTiles, STORYBOARD_MAX_ROWS, takesTile, tileDate, tilePosition, trimTiles, vttTime, type Tile } from "../../../src/media/storyboard";

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

describe("cue times", () => {
  const size = { width: 160, height: 90 };
  const cues = (vtt: string) => vtt.split("\n").filter((l) => l.includes("-->"));
  test("count from the origin given: a tile's cue keeps its times when older tiles are trimmed", () => {
    const tiles = [tile(0, 0), tile(5, 5), tile(10, 10)];
    const before = renderStoryboardVtt(tiles, size, "s.jpg", T0);
    const after = renderStoryboardVtt(trimTiles(tiles, T0 + 15_000, 8).kept, size, "s.jpg", T0);
    expect(after).toContain("NOTE program-date-time 2026-01-01T00:00:00.000Z");
    expect(cues(after)).toEqual(cues(before).slice(1));
    expect(cues(after)[0]).toBe("00:00:05.000 --> 00:00:10.000");
  });
  test("never go back: a tile dated before the one above it starts where that one does", () => {
    const vtt = renderStoryboardVtt([tile(0, 10), tile(5, 4, 5)], size, "s.jpg", T0);
    expect(cues(vtt)).toEqual(["00:00:10.000 --> 00:00:10.001", "00:00:10.000 --> 00:00:15.000"]);
  });
  const dates: [string, number | undefined, number, number][] = [
    ["the first tile", undefined, T0, T0],
    ["after the previous one", T0, T0 + 5000, T0 + 5000],
    ["the clock stepped back: the previous one's", T0 + 5000, T0 - 60_000, T0 + 5000],
  ];
  test.each(dates)("tileDate: %s", (_n, previous, at, want) => expect(tileDate(previous, at)).toBe(want));
});

describe("sprite sheets are bounded", () => {
  test.each([
    [{ height: 90 }, STORYBOARD_MAX_ROWS * 10],
    [{ height: 284 }, STORYBOARD_MAX_ROWS * 10],
    [{ height: 1000 }, 65 * 10],
  ])("capacity of tiles %o", (size, want) => expect(spriteCapacity(size)).toBe(want));
  test("a window that fits: every tile", () => {
    const tiles = Array.from({ length: 1000 }, (_, i) => tile(i, i * 5));
    expect(spriteTiles(tiles, { height: 90 })).toBe(tiles);
  });
  test("six hours of 9:16 tiles: a coarser step, at most 100 rows, cues still covering the window", () => {
    const tiles = Array.from({ length: 4320 }, (_, i) => tile(i, i * 5));
    const drawn = spriteTiles(tiles, { height: 284 });
    expect(drawn.length).toBe(864);
    expect(spriteGrid(drawn.length).rows * 284).toBeLessThanOrEqual(65_500);
    expect(drawn[0]!.programDateTime).toBe(T0);
    expect(drawn[1]!.programDateTime).toBe(T0 + 25_000);
    expect(drawn[0]!.duration).toBe(25);
    const last = drawn[drawn.length - 1]!;
    expect(last.programDateTime + last.duration * 1000).toBe(T0 + 4320 * 5000);
    expect(tiles[1]!.duration).toBe(5);
  });
  test("each build has its own file", () => expect(spriteFile("ab12")).toBe("sprite-ab12.jpg"));
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
