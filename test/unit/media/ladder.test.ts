import { even, loadLadder, matchTracks, renditionLadder } from "../../../src/media/ladder";
import type { SourceTrack } from "../../../src/shapes";

const P = (name: string, width: number, height: number, fps = 30, bitrate = 1_000_000) => ({ name, width, height, fps, bitrate });
const ids = (...list: number[]): SourceTrack[] => list.map((id) => ({ id }));
const avc = (id: number, width: number, height: number, codec = "avc1"): SourceTrack => ({ id, codec, width, height });

describe("renditionLadder", () => {
  it("no profiles: one passthrough rendition", () => {
    expect(renditionLadder([], 2)).toEqual([{ index: 0, name: "source", encode: null }]);
  });

  it.each([
    ["a plain source (track 0 only)", ids(0), [{ index: 0, name: "source", encode: null }]],
    ["no tracks known: the source", [], [{ index: 0, name: "source", encode: null }]],
    [
      "an encoder's ladder: one rendition per track, the default first",
      ids(0, 1, 2),
      [
        { index: 0, name: "source", encode: null },
        { index: 1, name: "source track 1", encode: null, track: 1 },
        { index: 2, name: "source track 2", encode: null, track: 2 },
      ],
    ],
  ] as const)("no profiles, %s", (_name, tracks, expected) => {
    expect(renditionLadder([], 2, tracks)).toEqual(expected);
  });

  it("profiles: tracks of no profile's size do not change the ladder (track 0 is transcoded)", () => {
    expect(renditionLadder([P("720p", 1280, 720)], 2, [avc(0, 1920, 1080), avc(1, 960, 540)]).map((r) => [r.name, r.track, !!r.encode])).toEqual([["720p", undefined, true]]);
  });

  it("profiles with an encoder's ladder: a profile one of its tracks has the size of is that track as sent, the rest encoded", () => {
    const r = renditionLadder([P("720p", 1280, 720), P("480p", 854, 480), P("240p", 426, 240)], 2, [avc(0, 1280, 720), avc(1, 852, 480), avc(2, 640, 360)]);
    expect(r).toEqual([
      { index: 0, name: "720p", encode: null },
      { index: 1, name: "480p", encode: null, track: 1 },
      { index: 2, name: "240p", encode: { width: 426, height: 240, fps: 30, bitrate: 1_000_000, gopFrames: 60 } },
    ]);
  });

  it.each([
    ["a single track of a profile's size is still encoded (the profile's bit rate and keyframes)", [avc(0, 1280, 720)], [undefined]],
    ["the ladder's tracks, matched by size within 4 px, each once", [avc(0, 1920, 1080), avc(1, 1280, 720), avc(2, 1280, 720)], [1, 2]],
    ["HEVC tracks are not taken (the encoded rungs and WebRTC are H.264)", [avc(0, 1280, 720, "hvc1"), avc(1, 1280, 720, "hvc1")], [undefined, undefined]],
    ["a default track in HEVC: no H.264 track is taken (the default one reaches ffmpeg as MP4 timed from zero)", [avc(0, 1920, 1080, "hvc1"), avc(1, 1280, 720)], [undefined]],
    ["a default track of no known codec: none is taken", [{ id: 0 }, avc(1, 1280, 720)], [undefined]],
    ["a track whose size is not known yet is not taken", [{ id: 0, codec: "avc1" }, avc(1, 1280, 720)], [1, undefined]],
    ["5 px off is another size", [avc(0, 1285, 720), avc(1, 1280, 725)], [undefined, undefined]],
  ] as const)("matchTracks: %s", (_what, tracks, expected) => {
    expect(matchTracks([P("a", 1280, 720), P("b", 1280, 720)].slice(0, expected.length), tracks)).toEqual(expected);
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
