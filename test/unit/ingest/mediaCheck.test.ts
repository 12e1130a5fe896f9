import { audioCodecOf, refuseAudio, refuseVideo, videoCodecOf } from "../../../src/ingest/mediaCheck";

const tag = (...bytes: number[]) => Uint8Array.from(bytes);
const exHeader = (fourcc: string, packetType = 0) => Uint8Array.from([0x80 | (1 << 4) | packetType, ...Buffer.from(fourcc, "latin1")]);

describe("the codec of a publisher's first tags", () => {
  it("reads legacy FLV video codec ids", () => {
    expect(videoCodecOf(tag(0x17, 0x00))).toBe("H.264"); // key frame, AVC sequence header
    expect(videoCodecOf(tag(0x27, 0x01))).toBe("H.264"); // inter frame
    expect(videoCodecOf(tag(0x12))).toBe("Sorenson H.263");
    expect(videoCodecOf(tag(0x19))).toBe("MPEG-4 Part 2");
    expect(videoCodecOf(tag(0x1c))).toBe("HEVC");
    expect(videoCodecOf(tag(0x1f))).toBe("unknown (FLV codec id 15)");
  });

  it("reads enhanced-RTMP FourCCs (OBS sends HEVC and AV1 this way)", () => {
    expect(videoCodecOf(exHeader("hvc1"))).toBe("HEVC");
    expect(videoCodecOf(exHeader("av01", 1))).toBe("AV1");
    expect(videoCodecOf(exHeader("vp09"))).toBe("VP9");
    expect(videoCodecOf(exHeader("xyz!"))).toBe('unknown (FourCC "xyz!")');
  });

  it("reads FLV sound formats", () => {
    expect(audioCodecOf(tag(0xaf, 0x00))).toBe("AAC");
    expect(audioCodecOf(tag(0x2f))).toBe("MP3");
    expect(audioCodecOf(tag(0xbf))).toBe("Speex");
  });

  it("has nothing to say of an empty tag", () => {
    expect(videoCodecOf(tag())).toBeUndefined();
    expect(audioCodecOf(tag())).toBeUndefined();
  });

  it("takes H.264 video with AAC audio, and names what it refuses", () => {
    expect(refuseVideo("H.264")).toBeUndefined();
    expect(refuseVideo("HEVC")).toBe("video codec HEVC is not supported: send H.264 video (with AAC audio)");
    expect(refuseAudio("AAC")).toBeUndefined();
    expect(refuseAudio("MP3")).toBe("audio codec MP3 is not supported: send AAC audio (or no audio)");
    expect(refuseAudio("Speex")).toMatch(/audio codec Speex is not supported: send AAC/);
  });
});
