import { audioForPipeline, otherVideoTracks, videoForPipeline } from "../../../src/ingest/flvForm";
import { encodeAudioTag, encodeVideoTag, readAudioTag, readVideoTag, type AudioTag, type VideoPacket, type VideoTag } from "../../../src/rtmp";

const b = (...bytes: number[]) => Buffer.from(bytes);
const avcC = b(1, 0x42, 0xc0, 0x1e, 0xff, 0xe1, 0, 0);
const nal = b(0, 0, 0, 2, 0x65, 0x88);
const asc = b(0x12, 0x10);

// The same H.264 and AAC in both forms: legacy bodies as ffmpeg writes them, enhanced as OBS does.
const LEGACY_AVC_CONFIG = Buffer.concat([b(0x17, 0x00, 0, 0, 0), avcC]);
const LEGACY_AVC_KEY = Buffer.concat([b(0x17, 0x01, 0, 0, 0x21), nal]);
const LEGACY_AVC_INTER = Buffer.concat([b(0x27, 0x01, 0, 0, 0), nal]);
const LEGACY_AAC_CONFIG = Buffer.concat([b(0xaf, 0x00), asc]);
const LEGACY_AAC_FRAME = b(0xaf, 0x01, 0x21, 0x10);

/** The enhanced form of a legacy body: the same packet, written without `legacy`. */
function enhancedVideo(legacy: Buffer): Buffer {
  const { legacy: _l, ...packet } = readVideoTag(legacy) as VideoTag & { legacy?: true };
  return encodeVideoTag(packet as VideoTag);
}
function enhancedAudio(legacy: Buffer): Buffer {
  const { legacy: _l, ...packet } = readAudioTag(legacy) as AudioTag & { legacy?: true };
  return encodeAudioTag(packet as AudioTag);
}

const video = (body: Buffer) => videoForPipeline(readVideoTag(body), body);
const audio = (body: Buffer) => audioForPipeline(readAudioTag(body), body);

describe("videoForPipeline", () => {
  it.each<[string, Buffer]>([
    ["AVC sequence header", LEGACY_AVC_CONFIG],
    ["AVC keyframe with a composition time", LEGACY_AVC_KEY],
    ["AVC inter frame", LEGACY_AVC_INTER],
  ])("turns E-RTMP avc1 back into the legacy bytes: %s", (_what, legacy) => {
    const enhanced = enhancedVideo(legacy);
    expect(enhanced[0]! & 0x80).toBe(0x80);
    expect(video(enhanced)).toEqual({ codec: "H.264", body: legacy });
    // And the legacy form goes on as sent.
    expect(video(legacy)).toEqual({ codec: "H.264", body: legacy });
  });

  it("takes the default track (id 0) of a multitrack message, wherever it is in the message", () => {
    const key = readVideoTag(enhancedVideo(LEGACY_AVC_KEY)) as Extract<VideoTag, { kind: "frame" }>;
    const other = { ...key, data: b(0, 0, 0, 1, 0x65) };
    const multitrack = encodeVideoTag({ kind: "multitrack", layout: "manyTracks", tracks: [{ trackId: 2, packet: other }, { trackId: 0, packet: key }, { trackId: 1, packet: other }] });
    expect(video(multitrack)).toEqual({ codec: "H.264", body: LEGACY_AVC_KEY });
  });

  it("drops a message of another track only, as OBS sends each rendition but its top one (a one-track multitrack message of its id)", () => {
    const key = readVideoTag(enhancedVideo(LEGACY_AVC_KEY)) as Extract<VideoTag, { kind: "frame" }>;
    const config = readVideoTag(enhancedVideo(LEGACY_AVC_CONFIG)) as Extract<VideoTag, { kind: "config" }>;
    for (const packet of [key, config]) {
      const rendition = encodeVideoTag({ kind: "multitrack", layout: "oneTrack", tracks: [{ trackId: 1, packet }] });
      expect(video(rendition)).toEqual({ codec: undefined, body: undefined });
    }
    // Its top rendition, a plain enhanced packet, is track 0.
    expect(video(enhancedVideo(LEGACY_AVC_KEY))).toEqual({ codec: "H.264", body: LEGACY_AVC_KEY });
  });

  it.each([
    ["HEVC", "hvc1"],
    ["AV1", "av01"],
  ] as const)("relays %s in the enhanced single-track form (the pipeline reads it as MP4), from a multitrack message too", (name, fourCc) => {
    const config = encodeVideoTag({ kind: "config", codec: fourCc, record: b(1, 2, 3) });
    expect(video(config)).toEqual({ codec: name, body: config });
    const frame = encodeVideoTag({ kind: "frame", codec: fourCc, frameType: 1, keyframe: true, compositionMs: 0, data: b(9, 9) });
    const inTrack0 = encodeVideoTag({ kind: "multitrack", layout: "oneTrack", tracks: [{ trackId: 0, packet: readVideoTag(frame) as VideoPacket }] });
    expect(video(inTrack0)).toEqual({ codec: name, body: frame });
  });

  it.each<[string, Buffer, string]>([
    ["VP9 over E-RTMP", b(0x90, ...Buffer.from("vp09")), "VP9"],
    ["an unknown FourCC", b(0x90, ...Buffer.from("xyz!")), 'unknown (FourCC "xyz!")'],
    ["Sorenson H.263", b(0x12, 0), "Sorenson H.263"],
    ["MPEG-4 Part 2", b(0x19, 0), "MPEG-4 Part 2"],
    ["the non-standard FLV HEVC", b(0x1c, 0), "HEVC"],
  ])("names what the pipeline cannot read, and relays none of the E-RTMP ones: %s", (_what, body, codec) => {
    const form = video(body);
    expect(form.codec).toBe(codec);
    if (body[0]! & 0x80) expect(form.body).toBeUndefined();
  });

  it("relays a command as sent, naming no codec; drops an HDR metadata packet", () => {
    expect(video(b(0x57, 0x00))).toEqual({ codec: undefined, body: b(0x57, 0x00) });
    const metadata = encodeVideoTag({ kind: "metadata", codec: "avc1", values: ["colorInfo", { colorConfig: { bitDepth: 8 } }] });
    expect(video(metadata)).toEqual({ codec: "H.264", body: undefined });
  });
});

describe("audioForPipeline", () => {
  it.each<[string, Buffer]>([
    ["AAC sequence header", LEGACY_AAC_CONFIG],
    ["AAC frame", LEGACY_AAC_FRAME],
  ])("turns E-RTMP mp4a back into the legacy bytes: %s", (_what, legacy) => {
    const enhanced = enhancedAudio(legacy);
    expect(enhanced[0]! >> 4).toBe(9);
    expect(audio(enhanced)).toEqual({ codec: "AAC", body: legacy });
    expect(audio(legacy)).toEqual({ codec: "AAC", body: legacy });
  });

  it("takes the default track of a multitrack message", () => {
    const frame = readAudioTag(enhancedAudio(LEGACY_AAC_FRAME)) as Extract<AudioTag, { kind: "frame" }>;
    const multitrack = encodeAudioTag({ kind: "multitrack", layout: "manyTracks", tracks: [{ trackId: 1, packet: { ...frame, data: b(1) } }, { trackId: 0, packet: frame }] });
    expect(audio(multitrack)).toEqual({ codec: "AAC", body: LEGACY_AAC_FRAME });
    const otherOnly = encodeAudioTag({ kind: "multitrack", layout: "oneTrack", tracks: [{ trackId: 2, packet: frame }] });
    expect(audio(otherOnly)).toEqual({ codec: undefined, body: undefined });
  });

  it.each<[string, Buffer, string]>([
    ["Opus over E-RTMP", b(0x90, ...Buffer.from("Opus")), "Opus"],
    ["MP3 (ffmpeg's default FLV audio)", b(0x2f, 0xff), "MP3"],
    ["Speex", b(0xbf, 0), "Speex"],
  ])("names what the pipeline cannot take: %s", (_what, body, codec) => {
    expect(audio(body).codec).toBe(codec);
  });

  it("relays silence (an empty message) as sent, naming no codec", () => {
    expect(audio(Buffer.alloc(0))).toEqual({ codec: undefined, body: Buffer.alloc(0) });
  });
});

describe("otherVideoTracks", () => {
  const packet = (legacy: Buffer) => {
    const { legacy: _l, ...p } = readVideoTag(legacy) as VideoPacket & { legacy?: true };
    return p as VideoPacket;
  };
  const hevc: VideoPacket = { kind: "config", codec: "hvc1", record: b(1, 2, 3) };
  const multitrack = (tracks: { trackId: number; packet: VideoPacket }[]) => readVideoTag(encodeVideoTag({ kind: "multitrack", layout: tracks.length > 1 ? "manyTracks" : "oneTrack", tracks }));

  it("H.264 of a ladder's other tracks in the legacy form ffmpeg's FLV reader takes, the same bytes as track 0's", () => {
    const out = otherVideoTracks(multitrack([{ trackId: 2, packet: packet(LEGACY_AVC_CONFIG) }]));
    expect(out).toEqual([{ trackId: 2, body: LEGACY_AVC_CONFIG }]);
    expect(otherVideoTracks(multitrack([{ trackId: 1, packet: packet(LEGACY_AVC_KEY) }]))).toEqual([{ trackId: 1, body: LEGACY_AVC_KEY }]);
  });

  it("HEVC stays enhanced (FLV cannot carry it); track 0 and non-multitrack messages give nothing", () => {
    expect(otherVideoTracks(multitrack([{ trackId: 1, packet: hevc }]))).toEqual([{ trackId: 1, body: encodeVideoTag(hevc) }]);
    expect(otherVideoTracks(multitrack([{ trackId: 0, packet: packet(LEGACY_AVC_KEY) }]))).toEqual([]);
    expect(otherVideoTracks(readVideoTag(LEGACY_AVC_KEY))).toEqual([]);
  });
});
