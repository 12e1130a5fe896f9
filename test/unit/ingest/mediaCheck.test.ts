import { refuseAudio, refuseVideo } from "../../../src/ingest/mediaCheck";

describe("the media check", () => {
  it("takes H.264 video with AAC audio, and names what it refuses", () => {
    expect(refuseVideo("H.264")).toBeUndefined();
    expect(refuseVideo("HEVC")).toBe("video codec HEVC is not supported: send H.264 video (with AAC audio)");
    expect(refuseAudio("AAC")).toBeUndefined();
    expect(refuseAudio("MP3")).toBe("audio codec MP3 is not supported: send AAC audio (or no audio)");
    expect(refuseAudio("Speex")).toMatch(/audio codec Speex is not supported: send AAC/);
  });
});
