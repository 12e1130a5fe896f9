import type { Writable } from "node:stream";
import { initSegment, PartFragmenter, SampleFragmenter, type Fragmenter, type Mp4Track } from "../mp4";
import { Amf0EcmaArray, decodeAmf0, isAmf0Object, readAudioTag, readVideoTag, type Amf0Value, type VideoFourCc } from "../rtmp";
import type { RelayedMedia } from "./liveSource";
import { PipeReader, type PipeOutput } from "./pipeReader";

// The pipe of a publish whose video ffmpeg's FLV reader does not know (HEVC, AV1 over Enhanced
// RTMP; ffmpeg 5.1 reads neither from FLV): the same messages as fragmented MP4, which it reads
// with `-f mov -i pipe:0`. One init segment when the first keyframe comes, then one fragment per
// frame, so nothing waits for a group of pictures: the pipe carries each frame as it arrives.

/** The video track's clock: 90 kHz, as usual for video, so milliseconds convert exactly. */
export const VIDEO_TIMESCALE = 90_000;
const VIDEO_TRACK = 1;
const AUDIO_TRACK = 2;
/** The first video sample's duration, having no previous one to measure from: a 30 fps frame. */
const DEFAULT_VIDEO_DURATION = VIDEO_TIMESCALE / 30;
/** The first AAC sample's duration: one AAC frame is 1024 samples. */
const AAC_FRAME_SAMPLES = 1024;

/** ISO/IEC 14496-3 Table 1.18, by samplingFrequencyIndex (13 and 14 reserved, 15 explicit). */
const AAC_RATES = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350];

export interface AacFacts {
  objectType: number;
  sampleRate: number;
  channels: number;
}

/**
 * What an AudioSpecificConfig says of the stream (ISO/IEC 14496-3 1.6.2.1): its object type
 * (5 bits, 31 escaping to 32 + 6 bits), sample rate (a 4-bit index, 15 for an explicit 24-bit
 * rate) and channel configuration (4 bits). Undefined when the bytes cannot hold them.
 */
export function aacConfigFacts(asc: Buffer): AacFacts | undefined {
  let bit = 0;
  const read = (n: number): number | undefined => {
    if (bit + n > asc.length * 8) return undefined;
    let value = 0;
    for (let i = 0; i < n; i++, bit++) value = value * 2 + ((asc[bit >> 3]! >> (7 - (bit & 7))) & 1);
    return value;
  };
  let objectType = read(5);
  if (objectType === 31) objectType = 32 + (read(6) ?? NaN);
  const index = read(4);
  const sampleRate = index === 15 ? read(24) : index === undefined ? undefined : AAC_RATES[index];
  const channels = read(4);
  if (objectType === undefined || Number.isNaN(objectType) || !sampleRate || channels === undefined) return undefined;
  return { objectType, sampleRate, channels };
}

/** Width and height from an onMetaData message, or undefined for any other data message. */
export function metadataSize(body: Buffer): { width: number; height: number } | undefined {
  let values: Amf0Value[];
  try {
    values = decodeAmf0(body);
  } catch {
    return undefined;
  }
  const [name, object] = values;
  if (name !== "onMetaData") return undefined;
  const entries = object instanceof Amf0EcmaArray ? object.entries : isAmf0Object(object) ? object : {};
  const num = (key: string) => {
    const v = Object.hasOwn(entries, key) ? entries[key] : undefined;
    return typeof v === "number" && Number.isFinite(v) && v > 0 && v < 65536 ? Math.round(v) : 0;
  };
  return { width: num("width"), height: num("height") };
}

/** What one message becomes on the pipe: bytes to write, and whether the pipe must end after them. */
/** `end` is set when the stream can go on no further in this MP4 (a new decoder configuration): why. */
export type Mp4Output = PipeOutput;

interface TrackClock {
  /** The previous sample's decode time, in the track's timescale. */
  last: number | undefined;
  timescale: number;
}

export interface Mp4MuxerOptions {
  /**
   * Seconds: fragments are LL-HLS parts of about this long, each keyframe opening one (for the
   * packager itself). Undefined: one fragment per frame (for a decoder reading a pipe).
   */
  partSeconds?: number;
  /** The video track it writes (an encoder's ladder); undefined: the default one. */
  track?: number;
}

const NOTHING: Mp4Output = { bytes: [] };

/**
 * The publish's messages as fragmented MP4: pure, no I/O. Messages in, bytes out, in the order
 * a pipe's reader must get them.
 */
export class Mp4Muxer {
  private size = { width: 0, height: 0 };
  private video: { codec: VideoFourCc; record: Buffer } | undefined;
  private audio: { config: Buffer; facts: AacFacts } | undefined;
  /** Set once the init segment is out: the tracks it declared can take samples. */
  private clocks: Map<number, TrackClock> | undefined;
  private fragmenter: Fragmenter | undefined;
  /**
   * Time 0 of every track, on the publisher's clock (ms): its first frame's for a decoder's pipe
   * (ffmpeg starts its output there); 0 for parts, so renditions packaged from several tracks of
   * one publish (and their segments' instants) share one timeline whichever frame each started on.
   */
  private origin = 0;
  /** The first frame's timestamp (ms): nothing before it is written (audio before the first picture). */
  private startsAt = 0;
  private ended = false;

  constructor(private readonly options: Mp4MuxerOptions = {}) {}

  push(media: RelayedMedia): Mp4Output {
    if (this.ended) return NOTHING;
    const out = media.kind === "video" ? this.onVideo(media) : media.kind === "audio" ? this.onAudio(media) : this.onData(media);
    if (out.end === undefined) return out;
    this.ended = true;
    // What a part fragmenter still holds goes out before the pipe ends.
    return { bytes: [...out.bytes, ...this.finish()], end: out.end };
  }

  /** The stream ends: the samples still held (a part in the making), as fragments. */
  finish(): Buffer[] {
    const held = this.fragmenter?.flush() ?? [];
    this.fragmenter = undefined;
    return held;
  }

  private onData(media: RelayedMedia): Mp4Output {
    const size = metadataSize(media.body);
    if (size) this.size = size;
    return NOTHING;
  }

  private onVideo(media: RelayedMedia): Mp4Output {
    const tag = parsedOrNothing(readVideoTag, media.body);
    if (!tag) return NOTHING;
    if (tag.kind === "config") return this.videoConfig(tag.codec, tag.record);
    if (tag.kind !== "frame" || !this.video || tag.codec !== this.video.codec) return NOTHING;
    const head: Buffer[] = [];
    if (!this.clocks) {
      // Nothing before the first keyframe decodes.
      if (!tag.keyframe) return NOTHING;
      head.push(this.init(media.timestamp));
    }
    const fragments = this.sample(VIDEO_TRACK, media.timestamp, tag.data, tag.keyframe, Math.round(tag.compositionMs * (VIDEO_TIMESCALE / 1000)));
    return { bytes: [...head, ...fragments] };
  }

  private videoConfig(codec: VideoFourCc, record: Buffer): Mp4Output {
    if (!this.clocks) {
      this.video = { codec, record };
      return NOTHING;
    }
    if (this.video && this.video.codec === codec && this.video.record.equals(record)) return NOTHING;
    // One init segment states one decoder configuration per track: a new one (a new resolution,
    // profile or codec mid-publish) cannot follow in this MP4. The pipe ends, and the pipeline,
    // restarted, reads the publish afresh with the new configuration in its init.
    return { bytes: [], end: `the video decoder configuration changed (${this.video?.codec} to ${codec})` };
  }

  private onAudio(media: RelayedMedia): Mp4Output {
    const tag = parsedOrNothing(readAudioTag, media.body);
    if (!tag) return NOTHING;
    if (tag.kind === "config" && tag.codec === "mp4a") return this.audioConfig(tag.config);
    if (tag.kind !== "frame" || tag.codec !== "mp4a" || !this.clocks?.has(AUDIO_TRACK)) return NOTHING;
    return { bytes: this.sample(AUDIO_TRACK, media.timestamp, tag.data, true, 0) };
  }

  private audioConfig(config: Buffer): Mp4Output {
    const facts = aacConfigFacts(config);
    if (!facts) return NOTHING;
    if (!this.clocks) {
      this.audio = { config, facts };
      return NOTHING;
    }
    // After the init: the same config again changes nothing; a track the init lacks cannot be
    // added (the stream stays without sound); a different config cannot be stated, as for video.
    if (!this.clocks.has(AUDIO_TRACK) || this.audio?.config.equals(config)) return NOTHING;
    return { bytes: [], end: "the audio decoder configuration changed" };
  }

  private init(timestamp: number): Buffer {
    const video = this.video!;
    this.startsAt = timestamp;
    this.origin = this.options.partSeconds === undefined ? timestamp : 0;
    // The size the decoder will find in the stream when the record says it, else the publisher's word.
    // onMetaData describes the default track: another track's size is its record's or unknown.
    const { width, height } = recordSize(video.codec, video.record) ?? (this.options.track ? { width: 0, height: 0 } : this.size);
    const tracks: Mp4Track[] = [{ id: VIDEO_TRACK, kind: "video", codec: video.codec, config: video.record, width, height, timescale: VIDEO_TIMESCALE }];
    const timing = [{ id: VIDEO_TRACK, timescale: VIDEO_TIMESCALE, defaultDuration: DEFAULT_VIDEO_DURATION }];
    if (this.audio) {
      const { config, facts } = this.audio;
      tracks.push({ id: AUDIO_TRACK, kind: "audio", codec: "mp4a", config, channels: facts.channels, sampleRate: facts.sampleRate, timescale: facts.sampleRate });
      timing.push({ id: AUDIO_TRACK, timescale: facts.sampleRate, defaultDuration: AAC_FRAME_SAMPLES });
    }
    this.clocks = new Map(timing.map((t) => [t.id, { last: undefined, timescale: t.timescale }]));
    const parts = this.options.partSeconds;
    this.fragmenter = parts === undefined ? new SampleFragmenter(timing) : new PartFragmenter(timing, VIDEO_TRACK, parts);
    return initSegment(tracks);
  }

  /** A sample timed on its track's clock, into the fragmenter; nothing for audio from before the first frame. */
  private sample(trackId: number, timestamp: number, data: Buffer, keyframe: boolean, compositionOffset: number): Buffer[] {
    const clock = this.clocks!.get(trackId)!;
    if (clock.last === undefined && timestamp < this.startsAt) return [];
    const at = sampleTime(timestamp, this.origin, clock.timescale, clock.last);
    if (at === undefined || !this.fragmenter) return [];
    clock.last = at;
    return this.fragmenter.add({ trackId, at, data, keyframe, compositionOffset });
  }
}

/**
 * A message's decode time in a track's timescale, counted from `origin` (ms). Before the origin
 * there is no time to give it (undefined: the sample is dropped). A time at or before the track's
 * previous one (a publisher's clock going back) is moved just after it, so decode times rise and
 * no duration is negative.
 */
export function sampleTime(timestamp: number, origin: number, timescale: number, last: number | undefined): number | undefined {
  if (timestamp < origin) return last === undefined ? undefined : last + 1;
  const at = Math.round(((timestamp - origin) * timescale) / 1000);
  return last !== undefined && at <= last ? last + 1 : at;
}

/** A tag body parsed, or undefined for one that does not parse (it is skipped, as a decoder would). */
function parsedOrNothing<T>(read: (body: Buffer) => T, body: Buffer): T | undefined {
  try {
    return read(body);
  } catch {
    return undefined;
  }
}

/**
 * The publish as fragmented MP4 (see Mp4Muxer): a frame per fragment for a decoder, or LL-HLS
 * parts for the packager (`partSeconds`). A new decoder configuration ends the pipe.
 */
export class Mp4PipeReader extends PipeReader {
  constructor(into: Writable, options: Mp4MuxerOptions = {}) {
    const muxer = new Mp4Muxer(options);
    super(into, (media) => muxer.push(media), () => muxer.finish(), options.track);
  }
}

// ---- the picture size a decoder configuration record states ----

/** Reads bits of a NAL unit's or OBU's payload, most significant first; past the end it throws. */
class BitReader {
  private bit = 0;
  constructor(private readonly bytes: Buffer) {}

  u(n: number): number {
    let value = 0;
    for (let i = 0; i < n; i++, this.bit++) {
      const byte = this.bytes[this.bit >> 3];
      if (byte === undefined) throw new RangeError("past the end");
      value = value * 2 + ((byte >> (7 - (this.bit & 7))) & 1);
    }
    return value;
  }

  /** ue(v) of H.265 (Exp-Golomb). */
  ue(): number {
    let zeros = 0;
    while (this.u(1) === 0) if (++zeros > 31) throw new RangeError("an Exp-Golomb code over 32 bits");
    return 2 ** zeros - 1 + this.u(zeros);
  }

  /** se(v) of H.264 (signed Exp-Golomb). */
  se(): number {
    const k = this.ue();
    return k % 2 === 1 ? (k + 1) / 2 : -k / 2;
  }

  /** uvlc() of AV1. */
  uvlc(): number {
    let zeros = 0;
    while (this.u(1) === 0) if (++zeros >= 32) return 2 ** 32 - 1;
    return 2 ** zeros - 1 + this.u(zeros);
  }
}

type Size = { width: number; height: number };

/**
 * The picture size of an HEVC stream: the SPS in the HEVCDecoderConfigurationRecord (ISO/IEC
 * 14496-15 8.3.3), its coded size less the conformance window (H.265 7.3.2.2). Undefined when
 * the record has no SPS or it cannot be read.
 */
export function hevcRecordSize(hvcC: Buffer): Size | undefined {
  try {
    let at = 23;
    for (let arrays = hvcC[22]!, i = 0; i < arrays; i++) {
      const type = hvcC[at]! & 0x3f;
      const count = hvcC.readUInt16BE(at + 1);
      at += 3;
      for (let n = 0; n < count; n++) {
        const length = hvcC.readUInt16BE(at);
        if (type === 33) return hevcSpsSize(hvcC.subarray(at + 2 + 2, at + 2 + length));
        at += 2 + length;
      }
    }
  } catch {
    // A record too short for what it says: no size from it.
  }
  return undefined;
}

/** A NAL unit's payload as its RBSP: each emulation prevention byte (the 03 of 00 00 03) taken out. */
function rbspOf(payload: Buffer): Buffer {
  const rbsp: number[] = [];
  let zeros = 0;
  for (const b of payload) {
    if (zeros >= 2 && b === 3) {
      zeros = 0;
      continue;
    }
    rbsp.push(b);
    zeros = b === 0 ? zeros + 1 : 0;
  }
  return Buffer.from(rbsp);
}

/**
 * The picture size of an H.264 stream: the first SPS of the AVCDecoderConfigurationRecord
 * (ISO/IEC 14496-15 5.3.3.1), its macroblocks less the frame cropping (H.264 7.3.2.1.1).
 * Undefined when there is none or it cannot be read.
 */
export function avcRecordSize(avcC: Buffer): Size | undefined {
  try {
    if ((avcC[5]! & 0x1f) === 0) return undefined;
    const length = avcC.readUInt16BE(6);
    return avcSpsSize(rbspOf(avcC.subarray(8 + 1, 8 + length)));
  } catch {
    return undefined;
  }
}

/** The profiles whose SPS carries chroma format, bit depths and scaling lists (H.264 7.3.2.1.1). */
const AVC_HIGH_PROFILES = new Set([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]);

function avcSpsSize(rbsp: Buffer): Size {
  const r = new BitReader(rbsp);
  const profile = r.u(8);
  r.u(16); // constraint flags, level_idc
  r.ue(); // seq_parameter_set_id
  let chroma = 1;
  if (AVC_HIGH_PROFILES.has(profile)) {
    chroma = r.ue();
    if (chroma === 3) r.u(1); // separate_colour_plane_flag
    r.ue(); // bit_depth_luma_minus8
    r.ue(); // bit_depth_chroma_minus8
    r.u(1); // qpprime_y_zero_transform_bypass_flag
    if (r.u(1)) {
      for (let i = 0; i < (chroma !== 3 ? 8 : 12); i++) if (r.u(1)) skipScalingList(r, i < 6 ? 16 : 64);
    }
  }
  r.ue(); // log2_max_frame_num_minus4
  const pocType = r.ue();
  if (pocType === 0) r.ue();
  else if (pocType === 1) {
    r.u(1);
    r.se();
    r.se();
    for (let n = r.ue(), i = 0; i < n; i++) r.se();
  }
  r.ue(); // max_num_ref_frames
  r.u(1); // gaps_in_frame_num_value_allowed_flag
  const widthMbs = r.ue() + 1;
  const heightUnits = r.ue() + 1;
  const frameMbsOnly = r.u(1);
  if (!frameMbsOnly) r.u(1); // mb_adaptive_frame_field_flag
  r.u(1); // direct_8x8_inference_flag
  let width = widthMbs * 16;
  let height = heightUnits * 16 * (2 - frameMbsOnly);
  if (r.u(1)) {
    const [left, right, top, bottom] = [r.ue(), r.ue(), r.ue(), r.ue()];
    const cropX = chroma === 1 || chroma === 2 ? 2 : 1;
    const cropY = (chroma === 1 ? 2 : 1) * (2 - frameMbsOnly);
    width -= cropX * (left + right);
    height -= cropY * (top + bottom);
  }
  return { width, height };
}

function skipScalingList(r: BitReader, size: number): void {
  let last = 8;
  let next = 8;
  for (let j = 0; j < size; j++) {
    if (next !== 0) next = (last + r.se() + 256) % 256;
    last = next === 0 ? last : next;
  }
}

function hevcSpsSize(payload: Buffer): Size {
  const r = new BitReader(rbspOf(payload));
  r.u(4); // sps_video_parameter_set_id
  const subLayers = r.u(3); // sps_max_sub_layers_minus1
  r.u(1);
  // profile_tier_level: the general part, then what each sub-layer says it has.
  r.u(96);
  const present = Array.from({ length: subLayers }, () => [r.u(1), r.u(1)] as const);
  if (subLayers > 0) for (let i = subLayers; i < 8; i++) r.u(2);
  for (const [profile, level] of present) r.u((profile ? 88 : 0) + (level ? 8 : 0));
  r.ue(); // sps_seq_parameter_set_id
  const chroma = r.ue();
  if (chroma === 3) r.u(1); // separate_colour_plane_flag
  let width = r.ue();
  let height = r.ue();
  if (r.u(1)) {
    const [left, right, top, bottom] = [r.ue(), r.ue(), r.ue(), r.ue()];
    const subWidth = chroma === 1 || chroma === 2 ? 2 : 1;
    const subHeight = chroma === 1 ? 2 : 1;
    width -= subWidth * (left + right);
    height -= subHeight * (top + bottom);
  }
  return { width, height };
}

/**
 * The largest picture of an AV1 stream: max_frame_width/height of the sequence header OBU in the
 * AV1CodecConfigurationRecord's configOBUs (AV1 5.5.1). Undefined when there is none.
 */
export function av1RecordSize(av1C: Buffer): Size | undefined {
  try {
    for (let at = 4; at < av1C.length; ) {
      const header = av1C[at++]!;
      if (header & 0x04) at++; // obu_extension_flag
      let size = av1C.length - at;
      if (header & 0x02) {
        size = 0;
        for (let i = 0; i < 8; i++) {
          const b = av1C[at++]!;
          size += (b & 0x7f) * 2 ** (7 * i);
          if ((b & 0x80) === 0) break;
        }
      }
      if (((header >> 3) & 0x0f) === 1) return av1SequenceSize(new BitReader(av1C.subarray(at, at + size)));
      at += size;
    }
  } catch {
    // Cut short: no size from it.
  }
  return undefined;
}

function av1SequenceSize(r: BitReader): Size {
  r.u(3); // seq_profile
  r.u(1); // still_picture
  if (r.u(1)) {
    r.u(5); // reduced_still_picture_header: one seq_level_idx, nothing else
  } else {
    let delayBits = 0;
    let decoderModel = 0;
    if (r.u(1)) {
      // timing_info
      r.u(64);
      if (r.u(1)) r.uvlc();
      decoderModel = r.u(1);
      if (decoderModel) {
        delayBits = r.u(5) + 1;
        r.u(32 + 5 + 5);
      }
    }
    const displayDelay = r.u(1);
    for (let ops = r.u(5) + 1, i = 0; i < ops; i++) {
      r.u(12); // operating_point_idc
      if (r.u(5) > 7) r.u(1); // seq_level_idx, seq_tier
      if (decoderModel && r.u(1)) r.u(2 * delayBits + 1);
      if (displayDelay && r.u(1)) r.u(4);
    }
  }
  const widthBits = r.u(4) + 1;
  const heightBits = r.u(4) + 1;
  return { width: r.u(widthBits) + 1, height: r.u(heightBits) + 1 };
}

/** What a record says of the picture size, for the codecs where it is read here. */
export function recordSize(codec: VideoFourCc, record: Buffer): Size | undefined {
  if (codec === "hvc1") return hevcRecordSize(record);
  if (codec === "av01") return av1RecordSize(record);
  if (codec === "avc1") return avcRecordSize(record);
  return undefined;
}
