// What a publisher sends, read from the first byte(s) of its FLV video and audio tags, and
// whether onair can take it. The pipeline and every HLS player need H.264: anything else
// (ffmpeg's default FLV video is Sorenson H.263; OBS can send HEVC or AV1 over enhanced
// RTMP) is refused at once with a reason, instead of a pipeline that fails or a stream no
// player can show.

/** FLV VideoTagHeader CodecID → name (FLV spec; 12 and 13 are the legacy HEVC/AV1 extensions). */
const VIDEO_CODECS: Record<number, string> = {
  1: "JPEG",
  2: "Sorenson H.263",
  3: "Screen Video",
  4: "On2 VP6",
  5: "On2 VP6 with alpha",
  6: "Screen Video 2",
  7: "H.264",
  9: "MPEG-4 Part 2",
  12: "HEVC",
  13: "AV1",
};

/** Enhanced RTMP FourCC → name. */
const VIDEO_FOURCCS: Record<string, string> = { hvc1: "HEVC", av01: "AV1", vp09: "VP9", avc1: "H.264 over enhanced RTMP" };

/** FLV AudioTagHeader SoundFormat → name. */
const AUDIO_FORMATS: Record<number, string> = {
  0: "PCM",
  1: "ADPCM",
  2: "MP3",
  3: "PCM little-endian",
  4: "Nellymoser 16 kHz",
  5: "Nellymoser 8 kHz",
  6: "Nellymoser",
  7: "G.711 A-law",
  8: "G.711 mu-law",
  10: "AAC",
  11: "Speex",
  14: "MP3 8 kHz",
};

export const SUPPORTED_VIDEO = "H.264";
/**
 * Passthrough copies the audio into HLS and the recording's MP4 (whose remux expects AAC), and
 * the master playlist declares AAC: MP3 (ffmpeg's default FLV audio) is refused like the rest.
 */
export const SUPPORTED_AUDIO = ["AAC"];

/** The codec of an FLV video tag's payload (legacy CodecID or enhanced-RTMP FourCC); undefined when empty. */
export function videoCodecOf(payload: Uint8Array): string | undefined {
  const first = payload[0];
  if (first === undefined) return undefined;
  const isExHeader = (first & 0x80) !== 0;
  if (isExHeader) {
    const fourcc = Buffer.from(payload.subarray(1, 5)).toString("latin1");
    return VIDEO_FOURCCS[fourcc] ?? `unknown (FourCC ${JSON.stringify(fourcc)})`;
  }
  const id = first & 0x0f;
  return VIDEO_CODECS[id] ?? `unknown (FLV codec id ${id})`;
}

/** The format of an FLV audio tag's payload; undefined when empty. */
export function audioCodecOf(payload: Uint8Array): string | undefined {
  const first = payload[0];
  if (first === undefined) return undefined;
  const id = first >> 4;
  return AUDIO_FORMATS[id] ?? `unknown (FLV sound format ${id})`;
}

/** Why a publisher's video cannot be taken; undefined when it can. */
export function refuseVideo(codec: string): string | undefined {
  if (codec !== SUPPORTED_VIDEO) return `video codec ${codec} is not supported: send ${SUPPORTED_VIDEO} video (with AAC audio)`;
}

/** Why a publisher's audio cannot be taken; undefined when it can. */
export function refuseAudio(codec: string): string | undefined {
  if (!SUPPORTED_AUDIO.includes(codec)) return `audio codec ${codec} is not supported: send AAC audio (or no audio)`;
}
