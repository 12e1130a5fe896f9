// Whether onair can take what a publisher sends, by the codec its first video and audio tags
// name (flvForm.ts reads them). Every HLS player and WebRTC viewer gets H.264: HEVC and AV1
// (OBS sends them over Enhanced RTMP) are taken by streams with a ladder, which transcodes
// them; a passthrough stream refuses them at its session's start (the stream runtime knows the
// profiles). Anything else (ffmpeg's default FLV video is Sorenson H.263) is refused at once
// with a reason, instead of a pipeline that fails or a stream no player can show.

/** H.264 as FLV; HEVC and AV1 (Enhanced RTMP) as fragmented MP4, transcoded to the H.264 ladder. */
export const SUPPORTED_VIDEO = ["H.264", "HEVC", "AV1"];

/** Video the packager takes as it is (a passthrough stream); the others are transcoded. */
export const PASSTHROUGH_VIDEO = "H.264";
/**
 * Passthrough copies the audio into HLS and the recording's MP4 (whose remux expects AAC), and
 * the master playlist declares AAC: MP3 (ffmpeg's default FLV audio) is refused like the rest.
 */
export const SUPPORTED_AUDIO = ["AAC"];

/** Why a publisher's video cannot be taken; undefined when it can. */
export function refuseVideo(codec: string): string | undefined {
  if (!SUPPORTED_VIDEO.includes(codec)) return `video codec ${codec} is not supported: send H.264, HEVC or AV1 video (with AAC audio)`;
}

/** Why a publisher's audio cannot be taken; undefined when it can. */
export function refuseAudio(codec: string): string | undefined {
  if (!SUPPORTED_AUDIO.includes(codec)) return `audio codec ${codec} is not supported: send AAC audio (or no audio)`;
}
