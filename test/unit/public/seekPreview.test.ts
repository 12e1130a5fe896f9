// The seek bar's preview (public/seekPreview.js): plain browser JavaScript, loaded here as the
// CommonJS module it also is.
interface Cue {
  from: number;
  to: number;
  url: string;
  x: number;
  y: number;
  w: number;
  h: number;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const preview = require("../../../public/seekPreview.js") as {
  parse(text: string, base: string): Cue[] | null;
  at(cues: Cue[] | null, date: number): Cue | null;
  dateAt(fragments: { start: number; programDateTime: number | null }[], t: number): number;
};

const BASE = "http://onair.test/hls/abcdabcdabcdabcd/storyboard.vtt?jwt=t";
const ORIGIN = Date.parse("2026-11-28T10:00:00.000Z");
const VTT = `WEBVTT

NOTE program-date-time 2026-11-28T10:00:00.000Z

00:00:00.000 --> 00:00:05.000
storyboard.jpg?jwt=t#xywh=0,0,160,90

00:00:05.000 --> 00:00:10.000
storyboard.jpg?jwt=t#xywh=160,0,160,90

01:00:10.000 --> 01:00:15.500
sheet-2.jpg#xywh=0,90,160,90
`;

describe("seekPreview.parse", () => {
  it("places the cues on the program date and resolves each sprite against the VTT's URL", () => {
    const cues = preview.parse(VTT, BASE)!;
    expect(cues).toEqual([
      { from: ORIGIN, to: ORIGIN + 5000, url: "http://onair.test/hls/abcdabcdabcdabcd/storyboard.jpg?jwt=t", x: 0, y: 0, w: 160, h: 90 },
      { from: ORIGIN + 5000, to: ORIGIN + 10_000, url: "http://onair.test/hls/abcdabcdabcdabcd/storyboard.jpg?jwt=t", x: 160, y: 0, w: 160, h: 90 },
      { from: ORIGIN + 3_610_000, to: ORIGIN + 3_615_500, url: "http://onair.test/hls/abcdabcdabcdabcd/sheet-2.jpg", x: 0, y: 90, w: 160, h: 90 },
    ]);
  });
  it.each([
    ["not a VTT", "hello"],
    ["no program date", "WEBVTT\n\n00:00:00.000 --> 00:00:05.000\nstoryboard.jpg#xywh=0,0,1,1\n"],
  ])("%s: null", (_name, text) => expect(preview.parse(text, BASE)).toBeNull());
  it("skips cues without a tile or with times that do not move forward", () => {
    const text = "WEBVTT\n\nNOTE program-date-time 2026-11-28T10:00:00.000Z\n\n00:00:05.000 --> 00:00:05.000\na.jpg#xywh=0,0,1,1\n\n00:00:05.000 --> 00:00:06.000\nno tile here\n";
    expect(preview.parse(text, BASE)).toEqual([]);
  });
});

describe("seekPreview.at", () => {
  const cues = preview.parse(VTT, BASE)!;
  it.each([
    ["inside the first", ORIGIN + 1000, 0],
    ["a cue's start belongs to it", ORIGIN + 5000, 1],
    ["in a gap: the nearest", ORIGIN + 1_000_000, 1],
    ["in a gap, nearer the next", ORIGIN + 3_000_000, 2],
    ["before the first: the first", ORIGIN - 60_000, 0],
    ["after the last: the last", ORIGIN + 9_000_000, 2],
  ])("%s", (_name, date, index) => expect(preview.at(cues, date)).toBe(cues[index]));
  it("nothing without cues or a date", () => {
    expect(preview.at(null, ORIGIN)).toBeNull();
    expect(preview.at([], ORIGIN)).toBeNull();
    expect(preview.at(cues, NaN)).toBeNull();
  });
});

describe("seekPreview.dateAt", () => {
  const frags = [
    { start: 100, programDateTime: ORIGIN },
    { start: 102, programDateTime: ORIGIN + 2000 },
    // After a reconnect: the media time runs on, the program date jumped.
    { start: 104, programDateTime: ORIGIN + 60_000 },
  ];
  it.each([
    [100.5, ORIGIN + 500],
    [103, ORIGIN + 3000],
    [105.25, ORIGIN + 61_250],
    [99, ORIGIN - 1000],
  ])("media time %s", (t, date) => expect(preview.dateAt(frags, t)).toBe(date));
  it("NaN without program dates", () => {
    expect(preview.dateAt([{ start: 0, programDateTime: null }], 1)).toBeNaN();
    expect(preview.dateAt([], 1)).toBeNaN();
  });
});
