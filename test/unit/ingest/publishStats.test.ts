import { isVideoKeyframe, PublishStats } from "../../../src/ingest/publishStats";

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
    s.audio(Uint8Array.from([0xaf, 0x01, 0x21]), 4020, 5020);
    expect(s).toMatchObject({ hasAudio: true, mediaMs: 4020, lastMediaAt: 5020 });
  });
  it("counts decoder configurations unlike the one before, video and audio apart", () => {
    const s = new PublishStats(0);
    const aac = (b: number) => Uint8Array.from([0xaf, 0x00, 0x12, b]);
    s.video(avcHeader, 0, 0);
    s.audio(aac(0x10), 0, 0);
    // The same again (encoders repeat them), and frames: no change.
    s.video(avcHeader, 10, 10);
    s.audio(aac(0x10), 10, 10);
    s.video(avcKey, 20, 20);
    expect(s.configChanges).toBe(0);
    s.video(Uint8Array.from([0x17, 0x00, 0, 0, 0, 1]), 30, 30);
    s.audio(aac(0x08), 40, 40);
    expect(s.configChanges).toBe(2);
  });
});
