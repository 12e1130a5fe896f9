import type { Rendition } from "../shapes";
import { THUMBNAIL_SECONDS, thumbnailOutputArgs, thumbnailScale } from "./thumbnails";

/** The form of the published stream on the pipeline's stdin. */
export type PipeFormat = "flv" | "mp4";

export interface LiveArgsInput {
  /** An FLV file to read instead of the published stream on ffmpeg's stdin (see livePipeline.ts). */
  inputFile?: string;
  /** What the stdin carries: FLV (H.264 sources), or fragmented MP4 (HEVC and AV1, which FLV cannot carry). FLV unless said. */
  inputFormat?: PipeFormat;
  renditions: Rendition[];
  /** Seconds between keyframes (and so the segments' length) of encoded renditions. */
  segmentSeconds: number;
  /** Fragments (LL-HLS parts) of this many µs; undefined: one fragment per keyframe interval. */
  fragmentMicros?: number;
  audioBitrate: number;
  /** The ffmpeg has `-movflags cmaf` (see ffmpegHasCmaf); assumed when unsaid. */
  cmaf?: boolean;
  /** Where the newest picture is kept as a JPEG (see thumbnails.ts); undefined: no thumbnail. */
  thumbnailFile?: string;
  /**
   * WebRTC playback: each rendition's video also as FLV on `realtimeVideoFd`, frame by
   * frame as it is encoded, and the audio encoded once more, to Opus, sent as RTP to
   * `audio.port` on loopback with `audio.ssrc` (when the source has audio). Undefined: HLS only.
   */
  realtime?: { audio: OpusRoute | undefined };
}

/** Rendition i's fragmented MP4 goes to this fd: 3, 4, … (0-2 are stdin, the progress lines, the log). */
export const renditionFd = (r: Pick<Rendition, "index">) => 3 + r.index;

/** Rendition i's video for WebRTC playback goes to this fd, after every rendition's fMP4 pipe. */
export const realtimeVideoFd = (r: Pick<Rendition, "index">, renditions: number) => 3 + renditions + r.index;

/**
 * The source's other video tracks a run reads (an encoder's ladder, for rungs it copies), in
 * the order of their inputs: ffmpeg input 1, 2, … (input 0 is the default track, with the audio).
 */
export function trackInputs(renditions: readonly Rendition[]): number[] {
  return [...new Set(renditions.flatMap((r) => (r.encode === null && r.track !== undefined && r.track !== 0 ? [r.track] : [])))];
}

/** Track input j (of trackInputs) is read from this fd, after every output pipe. */
export const trackInputFd = (j: number, renditions: number, realtime: boolean) => 3 + renditions * (realtime ? 2 : 1) + j;

/** The Opus bit rate of WebRTC playback's audio: transparent for stereo speech and music. */
export const OPUS_BITRATE = 96_000;

/** Where WebRTC playback's Opus goes: RTP on loopback to `port`, told apart from other sessions' by `ssrc`. */
export interface OpusRoute {
  port: number;
  ssrc: number;
}

/** The Opus output of WebRTC playback (of the audio mapped before it): 20 ms packets, as WebRTC expects. */
export function opusRtpOutput(audio: OpusRoute): string[] {
  return [
    "-c:a", "libopus", "-b:a", String(OPUS_BITRATE), "-ar", "48000", "-ac", "2", "-frame_duration", "20",
    // ffmpeg takes the SSRC as a signed 32-bit option: the same bits on the wire.
    "-ssrc", String(audio.ssrc | 0), "-f", "rtp", `rtp://127.0.0.1:${audio.port}?pkt_size=1200`,
  ];
}

/**
 * One ffmpeg for a live session: decode once, `split` into the ladder (or copy the source),
 * each rendition written as fragmented MP4 (CMAF) to its own pipe for onair's packager.
 *
 * Timing, the same in every rendition (RFC 8216 §6.2.4): the source goes through one `fps`
 * at the ladder's highest rate before the split. That snaps RTMP's millisecond timestamps
 * onto an exact frame grid, so a half-rate rendition's `fps` keeps every other frame (evenly
 * spaced, no judder), and every rendition stamps the same picture with the same time (one
 * 90 kHz track timescale for all).
 *
 * A thumbnail (when asked for) comes from the same decode: one more branch of the split, or,
 * when the source is only copied (no decode at all), from its keyframes alone: see below.
 */
export function buildLiveArgs(o: LiveArgsInput): string[] {
  // -progress: the output clock, twice a second, for the session's transcode speed.
  const args = ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "info", "-progress", "pipe:1"];
  // Half a second of probing: the ingest admits a publish once its audio (or the lack of it)
  // is known, so the streams are all there at once; the default 5 s would hold a video-only
  // stream back that long, and even with audio costs about 0.6 s of publish-to-playable.
  args.push("-analyzeduration", "500000");
  const encoded = o.renditions.filter((r) => r.encode);
  const tracks = trackInputs(o.renditions);
  // No thumbnail when rungs are copied from other inputs: ffmpeg feeds next the output stream
  // that is furthest behind, and a picture every few seconds is behind for seconds at a time,
  // in which only input 0 is read and the copied rungs come in bursts (measured: 2 s late).
  const thumbnail = o.thumbnailFile !== undefined && tracks.length === 0;
  // Passthrough decodes nothing for its renditions: the thumbnail's decoder skips every frame
  // but keyframes (a decoder option: stream copy never sees it, its output is bit-identical).
  // Measured on 720p30 at 3 Mb/s with 2 s GOPs: 0.15 CPU-s per 30 s of media against 0.06
  // without a thumbnail and 1.5 with a full decode.
  // The thumbnail is a file the previous run of the same session (a publisher that came back, a
  // restarted pipeline) left behind: overwritten, or ffmpeg would refuse to start.
  if (thumbnail) args.push("-y");
  if (thumbnail && encoded.length === 0) args.push("-skip_frame:v", "nokey");
  // low_delay: the decoder threads by slices, not frames; frame threading holds a frame back per
  // thread, a delay every viewer would see (WebRTC most: it sends frames as they are encoded).
  if (encoded.length > 0) args.push("-flags:v", "low_delay");
  // The ingest writes the publish into a pipe, tag by tag as it arrives; it ends the pipe when
  // the publish ends (or stalls: its media timeout), which ends this run like a file's end.
  args.push("-f", o.inputFormat === "mp4" ? "mov" : "flv", "-i", o.inputFile ?? "pipe:0");
  // Rungs of an encoder's ladder copied beside encoded ones: each such track is an input of its
  // own (FLV, H.264 only), on the publisher's clock like input 0 (-copyts: ffmpeg would start each
  // input at zero from its own first keyframe, and a track whose newest keyframe came a GOP
  // earlier would be a GOP off). The encoded rungs take their keyframes where the source has
  // them, so every rung cuts its segments at the same instants as the encoder's own.
  if (tracks.length > 0) args.splice(args.indexOf("-f"), 0, "-copyts");
  tracks.forEach((_, j) => args.push("-analyzeduration", "500000", "-f", "flv", "-i", `pipe:${trackInputFd(j, o.renditions.length, !!o.realtime)}`));

  // fps, not a select of keyframes: image2 is a CFR output, which would repeat a selected
  // picture at the source's rate. fps=1/N keeps the newest frame of each N s; it waits for the
  // next frame to know which that is: a frame's delay when every frame is decoded, a GOP on
  // keyframes alone. A source with B-frames adds the decoder's reorder delay, which counts
  // decoded frames: two more GOPs with x264's defaults (measured: 0.03 s to the first
  // picture without B-frames, 3.9 s with them, on 2 s GOPs).
  const thumbnailChain = `fps=1/${THUMBNAIL_SECONDS},${thumbnailScale}[thumb]`;
  if (encoded.length > 0) {
    const top = Math.max(...encoded.map((r) => r.encode!.fps));
    // Beside copied rungs (on the publisher's clock, -copyts), each encoded rung snaps to its own
    // rate after the split, so a source keyframe on the grid stays the frame a rung keeps (an
    // output -r drops it when it halves the rate: measured, keyframes a frame late at 60 to 30
    // fps). The price: a source gap of more than a frame and a half just after a keyframe makes
    // the filter repeat it, and the repeat is forced a keyframe too (a one-frame part).
    const snap = (fps: number) => (tracks.length === 0 && fps === top ? "" : `fps=${fps},`);
    const chains = encoded.map((r) => {
      const e = r.encode!;
      return (
        `[s${r.index}]${snap(e.fps)}scale=w=${e.width}:h=${e.height}:force_original_aspect_ratio=decrease,` +
        `pad=${e.width}:${e.height}:(ow-iw)/2:(oh-ih)/2,setsar=1[o${r.index}]`
      );
    });
    if (thumbnail) chains.push(`[st]${thumbnailChain}`);
    const branches = encoded.map((r) => `[s${r.index}]`).join("") + (thumbnail ? "[st]" : "");
    const split = `[0:v:0]${tracks.length > 0 ? "" : `fps=${top},`}split=${encoded.length + (thumbnail ? 1 : 0)}${branches}`;
    args.push("-filter_complex", [split, ...chains].join(";"));
  } else if (thumbnail) {
    args.push("-filter_complex", `[0:v:0]${thumbnailChain}`);
  }

  for (const r of o.renditions) {
    const e = r.encode;
    if (e) {
      args.push(
        "-map", `[o${r.index}]`, "-map", "0:a:0?",
        // zerolatency: no lookahead and no B-frames, so a frame leaves the encoder as it enters.
        "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
        "-b:v", String(e.bitrate), "-maxrate", String(e.bitrate), "-bufsize", String(e.bitrate * 2),
        // Keyframes exactly on segment boundaries, the same instants in every rendition, so
        // players can switch renditions at any segment.
        ...(tracks.length === 0
          ? ["-g", String(e.gopFrames), "-keyint_min", String(e.gopFrames), "-sc_threshold", "0", "-force_key_frames", `expr:gte(t,n_forced*${o.segmentSeconds})`]
          : // The source's keyframes; the encoder's own only where the source goes twice as long without one.
            ["-g", String(e.gopFrames * 2), "-sc_threshold", "0", "-force_key_frames", "source"]),
        "-c:a", "aac", "-b:a", String(o.audioBitrate), "-ar", "48000", "-ac", "2",
      );
    } else {
      const input = r.track !== undefined && r.track !== 0 ? tracks.indexOf(r.track) + 1 : 0;
      args.push("-map", `${input}:v:0`, "-map", "0:a:0?", "-c", "copy");
    }
    // empty_moov: the init segment first; default_base_moof: each fragment stands alone (a
    // part a player can fetch by itself); frag_keyframe: every keyframe starts a fragment.
    const movflags = `+frag_keyframe+empty_moov+default_base_moof+skip_trailer${o.cmaf === false ? "" : "+cmaf"}`;
    if (o.realtime) {
      args.push(...teeArgs(r, o.renditions.length, movflags, o.fragmentMicros));
      continue;
    }
    args.push(
      "-video_track_timescale", "90000",
      "-f", "mp4",
      "-movflags", movflags,
      ...(o.fragmentMicros ? ["-frag_duration", String(o.fragmentMicros)] : []),
      `pipe:${renditionFd(r)}`,
    );
  }
  if (o.realtime?.audio) {
    // One Opus encode for every viewer, 20 ms packets, as WebRTC expects; RTP on loopback to a
    // socket every session's pipeline shares, which tells them apart by SSRC.
    args.push("-map", "0:a:0", ...opusRtpOutput(o.realtime.audio));
  }
  if (thumbnail) args.push("-map", "[thumb]", ...thumbnailOutputArgs(o.thumbnailFile!));
  return args;
}

/**
 * A rendition written twice from one encode (or one copy) with ffmpeg's tee muxer: the fMP4
 * the packager reads, byte for byte as without the tee, and its video alone as FLV, each frame
 * flushed as it leaves the encoder (WebRTC playback sends frames, not parts). The tee has no
 * global header of its own: asked for, so x264 keeps SPS and PPS out of band as mp4 wants (FLV
 * carries them in its sequence header); a copied source has its own.
 */
function teeArgs(r: Rendition, renditions: number, movflags: string, fragmentMicros: number | undefined): string[] {
  const mp4 = ["f=mp4", `movflags=${movflags}`, ...(fragmentMicros ? [`frag_duration=${fragmentMicros}`] : []), "video_track_timescale=90000"];
  // onfail=ignore: should the FLV side fail (its reader gone), the fMP4 and HLS go on without it.
  const flv = ["f=flv", "select=v", "flush_packets=1", "onfail=ignore"];
  return [...(r.encode ? ["-flags", "+global_header"] : []), "-f", "tee", `[${mp4.join(":")}]pipe:${renditionFd(r)}|[${flv.join(":")}]pipe:${realtimeVideoFd(r, renditions)}`];
}
