import { area, flag, integer, text } from "../declare";

export const media = area("media", {
  FFMPEG_PATH: text({
    allowed: "a file",
    doc: "ffmpeg binary to use; else `ffmpeg` on `PATH`; else the optional npm-shipped build (`@ffmpeg-installer/ffmpeg`).",
  }).at("ffmpegPath"),
  // Output megapixels per second this node transcodes at most; unset: 50 per core.
  TRANSCODE_BUDGET: integer({
    default: 0,
    min: 0,
    max: 1_000_000,
    unit: "megapixels per second; 0 or unset: 50 per core",
    shown: "50 × cores",
    doc: "Megapixels per second of live transcoding this server admits; a publish whose ladder does not fit is refused with `server at capacity`.",
  }).at("transcodeBudget", (n) => (n === 0 ? undefined : n)),
  // Low-Latency HLS (parts of 0.2 s, blocking reload) by default; false: plain fMP4 HLS.
  HLS_LOW_LATENCY: flag({
    default: true,
    doc: "LL-HLS: 0.2 s parts, blocking playlist reload, preload hints. `false`: plain fMP4 HLS.",
  }).at("hlsLowLatency"),
  // 0: the mode's default (1 s with low latency, 2 s without).
  HLS_SEGMENT_SECONDS: integer({
    default: 0,
    min: 1,
    max: 10,
    unit: "seconds",
    shown: "`1` (`2` without low latency)",
    doc: "Target length of live segments, and the encoded renditions' keyframe interval: keyframes are forced on segment boundaries in every rendition.",
  }),
  HLS_LIST_SIZE: integer({
    default: 6,
    min: 2,
    max: 30,
    doc: "Segments in a live playlist. One that leaves it stays served for this many segments plus one more, then is deleted.",
  }).at("hlsListSize"),
});
