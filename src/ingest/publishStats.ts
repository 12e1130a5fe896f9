// What a publisher's media tags say about it, counted as they pass through the ingest: the
// media clock (for the transcode's speed against the source), the keyframe interval (for the
// stream's health) and when media last came (for stalled publishers). Pure, so it is tested
// by itself; the ingest feeds it one tag at a time.

export interface PublishStatsView {
  /** Timestamp of the newest media tag, ms on the publisher's clock. */
  mediaMs: number;
  /** Wall clock of the newest media tag, ms. */
  lastMediaAt: number;
  /** The newest interval between two video keyframes, ms; undefined before the second. */
  keyframeIntervalMs?: number;
  /** An audio tag has come. */
  hasAudio: boolean;
  /**
   * Decoder configurations (video or audio) unlike the one before of their kind: a run reading
   * the publish as MP4 ends at each (an init states one configuration), and is started again at
   * once, not counted as a failure.
   */
  configChanges: number;
}

export class PublishStats implements PublishStatsView {
  mediaMs = 0;
  lastMediaAt: number;
  keyframeIntervalMs: number | undefined;
  hasAudio = false;
  configChanges = 0;
  private lastKeyframeMs: number | undefined;
  private readonly configs: { video?: Buffer; audio?: Buffer } = {};

  constructor(now: number) {
    // A publish that never sends a tag is as stalled as one that stops.
    this.lastMediaAt = now;
  }

  /** A video tag: `payload` is the FLV video tag body, `clock` its RTMP timestamp. */
  video(payload: Uint8Array, clock: number, now: number): void {
    this.media(clock, now);
    if (isVideoSequenceHeader(payload)) return this.configuration("video", payload);
    if (isVideoKeyframe(payload)) {
      if (this.lastKeyframeMs !== undefined && clock > this.lastKeyframeMs) this.keyframeIntervalMs = clock - this.lastKeyframeMs;
      this.lastKeyframeMs = clock;
    }
  }

  /** An audio tag: `payload` is its body (a sequence header is told apart by it). */
  audio(payload: Uint8Array, clock: number, now: number): void {
    this.hasAudio = true;
    this.media(clock, now);
    if (isAudioSequenceHeader(payload)) this.configuration("audio", payload);
  }

  private configuration(kind: "video" | "audio", payload: Uint8Array): void {
    const last = this.configs[kind];
    if (last && !last.equals(payload)) this.configChanges++;
    this.configs[kind] = Buffer.from(payload);
  }

  private media(clock: number, now: number): void {
    if (clock > this.mediaMs) this.mediaMs = clock;
    this.lastMediaAt = now;
  }
}

/**
 * A coded keyframe (FLV VideoTagHeader frame type 1), not a sequence header: for legacy AVC
 * the AVCPacketType (second byte) is 1 for NAL units; for enhanced RTMP the packet type in the
 * low nibble is 1 (coded frames) or 3 (coded frames, no composition time).
 */
export function isVideoKeyframe(payload: Uint8Array): boolean {
  const first = payload[0];
  if (first === undefined) return false;
  const frameType = (first >> 4) & 0x07;
  if (frameType !== 1) return false;
  if ((first & 0x80) !== 0) return [1, 3].includes(first & 0x0f);
  return (first & 0x0f) !== 7 || payload[1] === 1;
}

/** A legacy AVC or enhanced-RTMP video sequence header (the decoder configuration). */
export function isVideoSequenceHeader(body: Uint8Array): boolean {
  const first = body[0];
  if (first === undefined) return false;
  if ((first & 0x80) !== 0) return (first & 0x0f) === 0;
  return (first & 0x0f) === 7 && body[1] === 0;
}

/** A legacy AAC or enhanced-RTMP audio sequence header. */
export function isAudioSequenceHeader(body: Uint8Array): boolean {
  const first = body[0];
  if (first === undefined) return false;
  const format = first >> 4;
  if (format === 9) return (first & 0x0f) === 0;
  return format === 10 && body[1] === 0;
}
