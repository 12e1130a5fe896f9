import { isVideoKeyframe, PublishStats } from "../../src/ingest/publishStats";
import { BREAKER_FAILURES, BREAKER_OPEN_MS, PipelineBreaker } from "../../src/sessions/breaker";
import { defaultTranscodeBudget, ladderCost, refuseForCapacity } from "../../src/sessions/capacity";
import { assessHealth } from "../../src/sessions/health";
import { SpeedMeter } from "../../src/sessions/speedMeter";

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

describe("capacity", () => {
  const ladder = [
    { width: 1280, height: 720, fps: 30 },
    { width: 854, height: 480, fps: 30 },
    { width: 640, height: 360, fps: 30 },
  ];
  it("costs output megapixels per second; passthrough costs nothing", () => {
    expect(ladderCost(ladder)).toBeCloseTo(46.82, 1);
    expect(ladderCost([])).toBe(0);
  });
  it.each([
    [0, 100, undefined],
    [46.8, 100, undefined],
    [60, 100, "server at capacity"],
  ])("with %s used of %s: %s", (used, budget, refusal) => {
    const r = refuseForCapacity(ladderCost(ladder), used, budget);
    if (refusal) expect(r).toContain(refusal);
    else expect(r).toBeUndefined();
  });
  it("a passthrough stream fits even on a full server", () => {
    expect(refuseForCapacity(0, 1000, 100)).toBeUndefined();
  });
  it("the default budget grows with the cores", () => {
    expect(defaultTranscodeBudget(2)).toBe(2 * defaultTranscodeBudget(1));
  });
});

describe("PipelineBreaker", () => {
  it(`opens after ${BREAKER_FAILURES} failures within its window, and closes after ${BREAKER_OPEN_MS / 1000} s`, () => {
    const b = new PipelineBreaker();
    b.failed("s", 0);
    b.failed("s", 30_000);
    expect(b.refusal("s", 31_000)).toBeUndefined();
    b.failed("s", 60_000);
    expect(b.refusal("s", 61_000)).toMatch(/failed 3 times in 2 minutes: publishes are refused for 59 s more/);
    expect(b.refusal("other", 61_000)).toBeUndefined();
    expect(b.refusal("s", 60_000 + BREAKER_OPEN_MS)).toBeUndefined();
  });
  it("failures spread over more than the window do not open it", () => {
    const b = new PipelineBreaker();
    for (const at of [0, 70_000, 140_000]) b.failed("s", at);
    expect(b.refusal("s", 141_000)).toBeUndefined();
  });
});

describe("PublishStats", () => {
  const avcKey = Uint8Array.from([0x17, 0x01, 0, 0, 0]);
  const avcHeader = Uint8Array.from([0x17, 0x00, 0, 0, 0]);
  const avcInter = Uint8Array.from([0x27, 0x01, 0, 0, 0]);
  it.each([
    ["an AVC keyframe", avcKey, true],
    ["the AVC sequence header", avcHeader, false],
    ["an inter frame", avcInter, false],
    ["an enhanced-RTMP coded keyframe", Uint8Array.from([0x91, 0x68, 0x76, 0x63, 0x31]), true],
    ["an enhanced-RTMP sequence start", Uint8Array.from([0x90, 0x68, 0x76, 0x63, 0x31]), false],
    ["nothing", new Uint8Array(0), false],
  ])("%s", (_name, payload, expected) => {
    expect(isVideoKeyframe(payload)).toBe(expected);
  });
  it("follows the media clock, the keyframe interval and audio", () => {
    const s = new PublishStats(1000);
    s.video(avcHeader, 0, 1000);
    s.video(avcKey, 0, 1000);
    s.video(avcInter, 1000, 2000);
    expect(s.keyframeIntervalMs).toBeUndefined();
    s.video(avcKey, 4000, 5000);
    expect(s.keyframeIntervalMs).toBe(4000);
    expect(s.hasAudio).toBe(false);
    s.audio(4020, 5020);
    expect(s).toMatchObject({ hasAudio: true, mediaMs: 4020, lastMediaAt: 5020 });
  });
});
