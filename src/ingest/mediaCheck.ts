// Whether onair can take what a publisher sends, by the codec its first video and audio tags
// name (flvForm.ts reads them). The pipeline and every HLS player need H.264: anything else
// (ffmpeg's default FLV video is Sorenson H.263; OBS can send HEVC or AV1 over enhanced
// RTMP) is refused at once with a reason, instead of a pipeline that fails or a stream no
// player can show.

export const SUPPORTED_VIDEO = "H.264";
/**
 * Passthrough copies the audio into HLS and the recording's MP4 (whose remux expects AAC), and
 * the master playlist declares AAC: MP3 (ffmpeg's default FLV audio) is refused like the rest.
 */
export const SUPPORTED_AUDIO = ["AAC"];

/** Why a publisher's video cannot be taken; undefined when it can. */
export function refuseVideo(codec: string): string | undefined {
  if (codec !== SUPPORTED_VIDEO) return `video codec ${codec} is not supported: send ${SUPPORTED_VIDEO} video (with AAC audio)`;
}

/** Why a publisher's audio cannot be taken; undefined when it can. */
export function refuseAudio(codec: string): string | undefined {
  if (!SUPPORTED_AUDIO.includes(codec)) return `audio codec ${codec} is not supported: send AAC audio (or no audio)`;
}
