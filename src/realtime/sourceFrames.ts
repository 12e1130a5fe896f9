import type { Logger } from "../log";
import type { OpusRoute } from "../media";
import { encodeFlvTag, flvHeader, FlvReader, FlvTagType, type FlvTag } from "../rtmp";
import { randomSsrc } from "../webrtc";
import type { AudioRoutes, AudioStart, FeedRun } from "./feed";

// WebRTC playback of a run that packages its source as sent (H.264 from one track, no ffmpeg):
// the publisher's own frames are what viewers get, read from the publish as FLV beside the
// packager, and its AAC becomes Opus in a small encoder that runs only while someone watches.
// Both keep the publisher's clock: the run's zero is the first tag's timestamp, and the encoder's
// first packet is stamped with the time of the first audio tag it was given.

/** An Opus encoder of FLV audio, sending RTP where it was told to. */
export interface OpusSink {
  write(flv: Buffer): void;
  stop(): void;
  readonly running: boolean;
}

/** Starts an Opus encoder (media/opusEncoder.ts) sending to `route`. */
export type StartOpus = (route: OpusRoute) => OpusSink;

/** What the run hands the publish to, as FLV, for as long as it runs. */
export interface SourceTap {
  write(chunk: Buffer): void;
  stop(): void;
}

/** An encoder that stopped under viewers (it failed, or fell behind) is started again at most this often. */
const OPUS_RESTART_MS = 5000;

/** How long the Opus encoder outlives its last viewer: a reload, or the next viewer soon after, finds it running. */
export const OPUS_LINGER_MS = 10_000;

/** A decoder configuration (AVC sequence header, AAC AudioSpecificConfig), not a picture or a sound. */
function isConfiguration(tag: FlvTag): boolean {
  if (tag.type === FlvTagType.audio) return isAacConfig(tag.data);
  // FrameType 1, CodecID 7 (AVC), AVCPacketType 0: what a reader of the legacy FLV form is sent.
  return tag.data.length >= 2 && (tag.data[0]! & 0x0f) === 7 && tag.data[1] === 0;
}

/** AAC's AudioSpecificConfig message (SoundFormat 10, AACPacketType 0): what a decoder needs before any frame. */
export function isAacConfig(body: Buffer): boolean {
  return body.length >= 2 && body[0]! >> 4 === 10 && body[1] === 0;
}

interface RunningEncoder {
  sink: OpusSink;
  ssrc: number;
  /** Seconds after the run's zero of the first audio tag it was given; undefined until then. */
  startSeconds: number | undefined;
}

export class SourceFrames implements SourceTap {
  private readonly flv = new FlvReader();
  /** The first tag's timestamp: the run's zero on the publisher's clock. */
  private origin: number | undefined;
  /** The newest AAC configuration: an encoder started later needs it before any frame. */
  private audioConfig: Buffer | undefined;
  private encoder: RunningEncoder | undefined;
  private idle: NodeJS.Timeout | undefined;
  private watching = 0;
  private startedAt = -Infinity;
  private stopped = false;
  private broken = false;

  constructor(
    private readonly run: FeedRun,
    private readonly opus: { start: StartOpus; routes: AudioRoutes } | undefined,
    private readonly log: Logger,
  ) {}

  write(chunk: Buffer): void {
    if (this.stopped || this.broken) return;
    let tags: FlvTag[];
    try {
      tags = this.flv.push(chunk);
    } catch (err) {
      this.broken = true;
      return this.run.unreadable(0, err);
    }
    for (const tag of tags) {
      if (tag.type === FlvTagType.script) continue;
      // The first picture or sound: a joining reader is handed the configurations first, stamped
      // when they were sent (the publish's start, hours ago it may be), not when they apply.
      if (!isConfiguration(tag)) this.origin ??= tag.timestamp;
      if (tag.type === FlvTagType.audio) this.audio(tag);
    }
    this.run.videoTags(0, tags, this.origin ?? 0);
  }

  /** The feed has this many viewers: the first starts the Opus encoder, the last one leaving stops it a while later. */
  viewers(n: number): void {
    this.watching = n;
    if (this.stopped || !this.opus) return;
    if (n === 0) {
      if (this.encoder && !this.idle) this.idle = setTimeout(() => this.stopEncoder(), OPUS_LINGER_MS).unref();
      return;
    }
    clearTimeout(this.idle);
    this.idle = undefined;
    // One that stopped (it fell behind, it failed) is started again by the next viewer.
    if (!this.encoder?.sink.running) this.startEncoder(this.opus);
  }

  stop(): void {
    this.stopped = true;
    this.stopEncoder();
  }

  private audio(tag: FlvTag): void {
    if (isAacConfig(tag.data)) this.audioConfig = tag.data;
    // Viewers are listening to an encoder that stopped: another one, not more often than OPUS_RESTART_MS.
    if (this.opus && this.encoder && !this.encoder.sink.running && this.watching > 0 && Date.now() - this.startedAt >= OPUS_RESTART_MS) this.startEncoder(this.opus);
    const encoder = this.encoder;
    if (!encoder?.sink.running || !this.audioConfig) return;
    if (encoder.startSeconds === undefined) {
      if (isAacConfig(tag.data)) return; // written with the first frame, at its time
      encoder.startSeconds = (tag.timestamp - this.origin!) / 1000;
      // ffmpeg stamps its first packet 0 whatever the input's first timestamp: this tag is it.
      const config = encodeFlvTag({ type: FlvTagType.audio, timestamp: tag.timestamp, data: this.audioConfig });
      encoder.sink.write(Buffer.concat([flvHeader({ audio: true, video: false }), config]));
    }
    encoder.sink.write(encodeFlvTag(tag));
  }

  private startEncoder(opus: { start: StartOpus; routes: AudioRoutes }): void {
    this.stopEncoder();
    const ssrc = randomSsrc();
    this.startedAt = Date.now();
    let first: AudioStart | undefined;
    let encoder: RunningEncoder;
    try {
      encoder = { sink: opus.start({ port: opus.routes.port, ssrc }), ssrc, startSeconds: undefined };
    } catch (err) {
      this.log.warn({ err }, "WebRTC playback: the Opus encoder could not be started; viewers get video only");
      return;
    }
    opus.routes.route(ssrc, (p) => {
      if (encoder.startSeconds === undefined) return;
      first ??= { rtp: p.timestamp, seconds: encoder.startSeconds };
      this.run.audioFrom(first, p);
    });
    this.encoder = encoder;
  }

  private stopEncoder(): void {
    clearTimeout(this.idle);
    this.idle = undefined;
    const encoder = this.encoder;
    if (!encoder) return;
    this.encoder = undefined;
    encoder.sink.stop();
    this.opus?.routes.unroute(encoder.ssrc);
  }
}
