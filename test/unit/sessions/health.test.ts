import { assessHealth } from "../../../src/sessions/health";

describe("assessHealth", () => {
  const base = { segmentSeconds: 2, hasAudio: true };
  it("healthy when every signal is fine", () => {
    expect(assessHealth({ ...base, speed: 1, keyframeIntervalMs: 2000, ingestRate: 100, ingestAverage: 110 })).toEqual({ isHealthy: true, issues: [], kinds: [] });
  });
  it.each([
    ["slow_transcode", { speed: 0.8 }, /transcode slower than real time: 0.80x/],
    ["long_keyframe_interval", { keyframeIntervalMs: 4000 }, /keyframe interval 4.0 s is longer than 2 s: set the encoder's keyframe interval to 2 s or less/],
    ["bitrate_collapse", { ingestRate: 10_000, ingestAverage: 100_000 }, /ingest bitrate collapsed: 80 kbit\/s, 10 %/],
    ["no_audio", { hasAudio: false }, /no audio/],
    ["unaligned_keyframes", { unalignedRenditions: ["source track 1"] }, /keyframes at different instants \(source track 1 against the top one\)/],
    ["silent_renditions", { silentRenditions: ["source track 2"] }, /announced renditions that send no frames \(source track 2\)/],
    ["dvr_window_cut", { dvrCut: "DVR window cut to 60 s of the 7200 s asked" }, /^DVR window cut to 60 s of the 7200 s asked$/],
  ] as const)("%s", (kind, signals, text) => {
    const h = assessHealth({ ...base, ...signals });
    expect(h.isHealthy).toBe(false);
    expect(h.kinds).toEqual([kind]);
    expect(h.issues[0]).toMatch(text);
  });
  it("the keyframe limit is 2 s, or the segment length when longer", () => {
    expect(assessHealth({ ...base, segmentSeconds: 1, keyframeIntervalMs: 2000 }).isHealthy).toBe(true);
    expect(assessHealth({ ...base, segmentSeconds: 1, keyframeIntervalMs: 2500 }).issues[0]).toMatch(/longer than 2 s/);
    expect(assessHealth({ ...base, segmentSeconds: 4, keyframeIntervalMs: 4000 }).isHealthy).toBe(true);
    expect(assessHealth({ ...base, segmentSeconds: 4, keyframeIntervalMs: 5000 }).issues[0]).toMatch(/longer than 4 s: set the encoder's keyframe interval to 4 s or less/);
  });
  it("reconnecting says only that, with the time left", () => {
    const h = assessHealth({ ...base, reconnectingSecondsLeft: 12.2, speed: 0.1 });
    expect(h.kinds).toEqual(["reconnecting"]);
    expect(h.issues).toEqual(["reconnecting: the publisher left; the session waits 13 s more for it"]);
  });
});
