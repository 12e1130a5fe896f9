import type { Rendition } from "../../../src/shapes";
import { afterRun, endedForNewConfiguration, noWebrtcReason, passesThrough, runForm, sameLadder, sourceFramesPlay } from "../../../src/sessions/sessionRuns";

// The decisions about a session's pipeline runs that need no process: which kind of run a
// source gets, which publishers can continue a session, what follows a run's exit.

const copy = (index: number, track?: number): Rendition => ({ index, name: index === 0 ? "source" : `track ${track}`, encode: null, ...(track === undefined ? {} : { track }) });
const encoded = (index: number): Rendition => ({ index, name: `${index}`, encode: { width: 1280, height: 720, fps: 30, bitrate: 3_000_000, gopFrames: 60 } });

const source = [copy(0)];
const ladder = [copy(0, 0), copy(1, 1), copy(2, 2)];
const transcoded = [encoded(0), encoded(1)];

describe("a session's pipeline runs", () => {
  it.each([
    ["a source copied", source, true],
    ["an encoder's ladder", ladder, true],
    ["profiles", transcoded, false],
    ["profiles beside the source's copy", [copy(0), encoded(1)], false],
  ] as const)("passesThrough(%s)", (_, renditions, expected) => {
    expect(passesThrough(renditions)).toBe(expected);
  });

  it.each([
    // A run before the codec is known, and H.264, read FLV; a source copied is packaged as sent, whatever its codec.
    ["codec not known yet", undefined, source, { format: "flv", packagesSource: false }],
    ["H.264 copied", "H.264", source, { format: "flv", packagesSource: true }],
    ["H.264 transcoded", "H.264", transcoded, { format: "flv", packagesSource: false }],
    // FLV carries H.264 only.
    ["HEVC copied", "HEVC", source, { format: "mp4", packagesSource: true }],
    ["AV1 copied", "AV1", source, { format: "mp4", packagesSource: true }],
    ["HEVC transcoded", "HEVC", transcoded, { format: "mp4", packagesSource: false }],
    // An encoder's own ladder is packaged as sent, whatever its codec.
    ["an H.264 ladder", "H.264", ladder, { format: "flv", packagesSource: true }],
  ] as const)("runForm(%s)", (_, codec, renditions, expected) => {
    expect(runForm(codec, renditions)).toEqual(expected);
  });

  it.each([
    ["a clean end of an MP4-reading run after a change", { code: 0, requested: false }, true, 1, 2, true],
    ["no change since the run started", { code: 0, requested: false }, true, 2, 2, false],
    ["an FLV-reading run (ffmpeg takes a new configuration in stride)", { code: 0, requested: false }, false, 1, 2, false],
    ["a failure, whatever changed", { code: 1, requested: false }, true, 1, 2, false],
    ["a run the session stopped", { code: 0, requested: true }, true, 1, 2, false],
    ["no publisher stats", { code: 0, requested: false }, true, undefined, undefined, false],
  ] as const)("endedForNewConfiguration: %s", (_, end, readsMp4, atStart, now, expected) => {
    expect(endedForNewConfiguration(end, readsMp4, atStart, now)).toBe(expected);
  });

  it.each([
    ["the same encoded ladder", transcoded, [encoded(0), encoded(1)], true],
    ["a copied source", source, [copy(0)], true],
    ["a copied source, then a ladder", source, ladder, false],
    ["the same ladder", ladder, [copy(0, 0), copy(1, 1), copy(2, 2)], true],
    ["a ladder, then fewer tracks", ladder, [copy(0, 0), copy(1, 1)], false],
    ["a ladder, then other tracks", ladder, [copy(0, 0), copy(1, 1), copy(2, 3)], false],
    ["a rung taken from a track, then encoded", [copy(0), copy(1, 1)], [copy(0), encoded(1)], false],
  ] as const)("sameLadder(%s)", (_, renditions, next, expected) => {
    expect(sameLadder(renditions, next)).toBe(expected);
  });

  it.each([
    [1, "HEVC", "this stream plays its HEVC video as sent"],
    [1, undefined, "this stream plays its source video as sent"],
    [3, "H.264", "this stream plays its encoder's own renditions (multitrack) as sent"],
  ] as const)("noWebrtcReason(%i renditions, %s)", (renditions, codec, start) => {
    const reason = noWebrtcReason(renditions, codec);
    expect(reason.startsWith(start)).toBe(true);
    expect(reason).toContain("WebRTC playback carries H.264 from a single-track source or from the server's ladder");
  });

  it.each([
    // Its own frames: H.264 (FLV), one track.
    ["H.264 copied", "H.264", source, true],
    ["HEVC copied", "HEVC", source, false],
    ["an H.264 ladder", "H.264", ladder, false],
    ["H.264 transcoded (the run's ffmpeg taps its encodes)", "H.264", transcoded, false],
  ] as const)("sourceFramesPlay(%s)", (_, codec, renditions, expected) => {
    expect(sourceFramesPlay(runForm(codec, renditions), renditions.length)).toBe(expected);
  });

  it.each([
    [true, true, "finish"],
    [true, false, "finish"],
    [false, true, "restart"],
    [false, false, "wait"],
  ] as const)("afterRun(ending %s, publisher %s)", (ending, publisher, expected) => {
    expect(afterRun(ending, publisher)).toBe(expected);
  });
});
