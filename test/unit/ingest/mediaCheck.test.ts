import { refuseAudio, refuseVideo } from "../../../src/ingest/mediaCheck";

describe("the media check", () => {
  it("takes H.264, HEVC and AV1 video with AAC audio, and names what it refuses", () => {
    for (const codec of ["H.264", "HEVC", "AV1"]) expect(refuseVideo(codec)).toBeUndefined();
    expect(refuseVideo("VP9")).toBe("video codec VP9 is not supported: send H.264, HEVC or AV1 video (with AAC audio)");
    expect(refuseAudio("AAC")).toBeUndefined();
    expect(refuseAudio("MP3")).toBe("audio codec MP3 is not supported: send AAC audio (or no audio)");
    expect(refuseAudio("Speex")).toMatch(/audio codec Speex is not supported: send AAC/);
  });
});
