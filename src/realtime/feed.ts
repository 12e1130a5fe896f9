import type { Logger } from "../log";
import type { RealtimeTap } from "../media";
import { FlvReader, FlvTagType, type FlvTag } from "../rtmp";
import type { Rendition } from "../shapes";
import { randomSsrc, type RtpPacket } from "../webrtc";
import { readFlvVideo, webrtcFrame, type AvcConfig } from "./avc";
import { SourceFrames, type SourceTap, type StartOpus } from "./sourceFrames";

// A live session's frames for WebRTC playback: each encoded rendition's H.264 as its ffmpeg
// writes it (FLV, one tag per frame), the Opus audio as RTP. It outlives a pipeline run, as the
// packager does: a restart or a reconnect continues the same timeline, so viewers stay.

/** An encoded frame on the session's timeline (90 kHz), NAL units behind 4-byte lengths. */
export interface VideoFrame {
  rendition: number;
  timestamp: number;
  keyframe: boolean;
  data: Buffer;
}

/** An Opus packet on the session's timeline (48 kHz). */
export interface AudioFrame {
  timestamp: number;
  data: Buffer;
}

export interface FeedListener {
  video(frame: VideoFrame): void;
  audio(frame: AudioFrame): void;
  /** The session ended: no more frames. */
  feedEnded(): void;
  /** This run will send no more of a rendition's frames (they could not be read). */
  renditionLost?(index: number): void;
}

/** The node's Opus socket: a run's audio reaches its feed by the SSRC ffmpeg was given. */
export interface AudioRoutes {
  port: number;
  route(ssrc: number, to: (packet: RtpPacket) => void): void;
  unroute(ssrc: number): void;
}

/** A run starts this far after the previous one's last frame: its timestamps only grow. */
const RUN_GAP_SECONDS = 0.1;

export class LiveFeed {
  private readonly listeners = new Set<FeedListener>();
  private run: FeedRun | undefined;
  /** Where the current run's zero is on the session's timeline. */
  private runBase = 0;
  private lastSeconds = 0;
  /** When the last frame came (ms): the gap a restart or a reconnect leaves is this far from now. */
  private lastAt = Date.now();
  private ended = false;
  /** Renditions that have sent a keyframe: a viewer can start on them. */
  private readonly started = new Set<number>();
  /** Renditions whose frames this run could not read: none of theirs come until the next run. */
  private readonly lost = new Set<number>();

  /** A copied source showed B-frames (a composition offset): WebRTC players cannot take it. */
  private bframes = false;
  /** This run has no frames for WebRTC (the source is packaged as sent): why. */
  private noFrames: string | undefined;

  constructor(
    readonly playbackId: string,
    readonly renditions: Rendition[],
    private readonly audio: AudioRoutes | undefined,
    private readonly log: Logger,
  ) {}

  /** Some rendition has had a keyframe in this session: there is something to play. */
  get playable(): boolean {
    return [...this.started].some((index) => !this.lost.has(index));
  }

  isLost(index: number): boolean {
    return this.lost.has(index);
  }

  /** Why the session cannot be played over WebRTC, if it cannot. */
  get refusal(): string | undefined {
    if (this.noFrames) return this.noFrames;
    if (this.bframes) return "the stream's source has B-frames, which WebRTC players cannot play: publish without them (x264 bframes=0, OBS's zerolatency tune) or add profiles, and play its HLS meanwhile";
    return undefined;
  }

  /** A listener that comes after the end (or the B-frames' refusal) hears it at once. */
  listen(listener: FeedListener): () => void {
    if (this.ended || this.bframes) {
      listener.feedEnded();
      return () => undefined;
    }
    this.listeners.add(listener);
    this.run?.onViewers?.(this.listeners.size);
    return () => {
      if (this.listeners.delete(listener)) this.run?.onViewers?.(this.listeners.size);
    };
  }

  get viewers(): number {
    return this.listeners.size;
  }

  /**
   * The next run has no frames for WebRTC (a source packaged as sent, with no encoder to tap):
   * viewers are let go, and those who come are told `reason`, until a run with frames starts.
   */
  runWithoutFrames(reason: string): void {
    // The stopped run stays the previous one: the next run's timeline starts after its last frame.
    this.run?.stop();
    this.noFrames = reason;
    this.started.clear();
    for (const l of [...this.listeners]) l.feedEnded();
    this.listeners.clear();
  }

  /** The tap for the next pipeline run; `hasAudio`: the source has audio to encode. */
  startRun(hasAudio: boolean): RealtimeTap {
    const run = this.nextRun();
    const audio = hasAudio && this.audio ? { port: this.audio.port, ssrc: randomSsrc() } : undefined;
    if (audio) this.audio!.route(audio.ssrc, (p) => run.audioPacket(p));
    run.onStop = () => audio && this.audio!.unroute(audio.ssrc);
    return { audio, video: (index, chunk) => run.videoChunk(index, chunk) };
  }

  /**
   * The next run packages the source as sent, and its H.264 is what viewers get: the publish
   * as FLV goes to the returned tap. `opus` starts an encoder of its audio while someone
   * watches (undefined: no audio, or no Opus encoder on this node).
   */
  startSourceRun(opus: StartOpus | undefined): SourceTap {
    const run = this.nextRun();
    const frames = new SourceFrames(run, opus && this.audio ? { start: opus, routes: this.audio } : undefined, this.log);
    run.onStop = () => frames.stop();
    run.onViewers = (n) => frames.viewers(n);
    frames.viewers(this.listeners.size);
    return frames;
  }

  private nextRun(): FeedRun {
    this.run?.stop();
    this.noFrames = undefined;
    // As much later as the wall clock says (at least RUN_GAP_SECONDS): a player's jitter buffer
    // takes a timestamp that jumps less than the time that passed for a delay to make up.
    if (this.run) this.runBase = this.lastSeconds + Math.max(RUN_GAP_SECONDS, (Date.now() - this.lastAt) / 1000);
    const run = new FeedRun(this, this.runBase, this.log);
    this.run = run;
    this.lost.clear();
    return run;
  }

  /** The session is over: viewers are told, the audio route goes. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.run?.stop();
    for (const l of [...this.listeners]) l.feedEnded();
    this.listeners.clear();
  }

  /** @internal A run's frame, on the session's timeline; `reordered`: it has a composition offset. */
  emitVideo(frame: VideoFrame, seconds: number, reordered: boolean): void {
    this.lastSeconds = Math.max(this.lastSeconds, seconds);
    this.lastAt = Date.now();
    if (reordered && !this.bframes) {
      // Only a copied source can (the ladder encodes without B-frames): its viewers end, none start.
      this.bframes = true;
      this.log.info("WebRTC playback: the source has B-frames; the stream plays over HLS only");
      for (const l of [...this.listeners]) l.feedEnded();
      this.listeners.clear();
      // Nobody watches now (an encoder started for them lingers, then stops).
      this.run?.onViewers?.(0);
    }
    if (this.bframes || this.lost.has(frame.rendition)) return;
    if (frame.keyframe) this.started.add(frame.rendition);
    for (const l of this.listeners) l.video(frame);
  }

  /** @internal A run stopped reading a rendition: its viewers move to another one, or end. */
  loseRendition(index: number): void {
    this.lost.add(index);
    for (const l of [...this.listeners]) l.renditionLost?.(index);
  }

  /** @internal */
  emitAudio(frame: AudioFrame, seconds: number): void {
    this.lastSeconds = Math.max(this.lastSeconds, seconds);
    this.lastAt = Date.now();
    for (const l of this.listeners) l.audio(frame);
  }
}

/** One pipeline run's readers: FLV per rendition, the first audio timestamp. */
export class FeedRun {
  onStop: (() => void) | undefined;
  /** The feed's viewers are now this many (a run that encodes for them on demand listens). */
  onViewers: ((viewers: number) => void) | undefined;
  private readonly readers = new Map<number, { flv: FlvReader; config: AvcConfig | undefined; broken: boolean }>();
  private firstAudio: AudioStart | undefined;
  private stopped = false;

  constructor(
    private readonly feed: LiveFeed,
    private readonly base: number,
    private readonly log: Logger,
  ) {}

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.onStop?.();
  }

  /** Rendition `index`'s video as FLV bytes (its encoder's output), its timestamps from the run's zero. */
  videoChunk(index: number, chunk: Buffer): void {
    const reader = this.reader(index);
    if (this.stopped || reader.broken) return;
    let tags: FlvTag[];
    try {
      tags = reader.flv.push(chunk);
    } catch (err) {
      return this.unreadable(index, err);
    }
    this.videoTags(index, tags, 0);
  }

  /** Rendition `index`'s FLV video tags (others are skipped), `originMs` being the run's zero on their clock. */
  videoTags(index: number, tags: readonly FlvTag[], originMs: number): void {
    const reader = this.reader(index);
    if (this.stopped || reader.broken) return;
    // Read first, then hand on: a listener's failure is not the pipe's.
    const frames: { frame: VideoFrame; seconds: number; reordered: boolean }[] = [];
    let unreadable: unknown;
    try {
      for (const tag of tags) {
        if (tag.type !== FlvTagType.video) continue;
        const video = readFlvVideo(tag.data);
        if (video?.kind === "config") reader.config = video.config;
        else if (video?.kind === "frame" && reader.config) {
          const seconds = this.base + (tag.timestamp - originMs + video.compositionMs) / 1000;
          const data = webrtcFrame(video.nalus, reader.config, video.keyframe);
          frames.push({ frame: { rendition: index, timestamp: Math.round(seconds * 90_000), keyframe: video.keyframe, data }, seconds, reordered: video.compositionMs !== 0 });
        }
      }
    } catch (err) {
      unreadable = err;
    }
    for (const f of frames) this.feed.emitVideo(f.frame, f.seconds, f.reordered);
    if (unreadable !== undefined) this.unreadable(index, unreadable);
  }

  private reader(index: number): { flv: FlvReader; config: AvcConfig | undefined; broken: boolean } {
    let reader = this.readers.get(index);
    if (!reader) this.readers.set(index, (reader = { flv: new FlvReader(), config: undefined, broken: false }));
    return reader;
  }

  /** A rendition's frames cannot be read: none of its frames come for the rest of the run. */
  unreadable(index: number, err: unknown): void {
    // WebRTC playback of this rendition stops for the run; HLS, fed by its own pipe, goes on.
    // Its viewers move to another rendition at its next keyframe (or end and fall back to HLS).
    this.reader(index).broken = true;
    this.log.warn({ err, rendition: index }, "WebRTC playback: a rendition's frames could not be read; its viewers move to another rendition");
    this.feed.loseRendition(index);
  }

  /** An Opus packet of the run's own encoder, whose first packet is at the run's zero. */
  audioPacket(p: RtpPacket): void {
    this.firstAudio ??= { rtp: p.timestamp, seconds: 0 };
    this.audioFrom(this.firstAudio, p);
  }

  /** An Opus packet of an encoder whose packet `first.rtp` is `first.seconds` after the run's zero. */
  audioFrom(first: AudioStart, p: RtpPacket): void {
    if (this.stopped) return;
    // Unsigned 32-bit distance from the first packet: RTP timestamps wrap.
    const samples = (p.timestamp - first.rtp) >>> 0;
    const start = this.base + first.seconds;
    this.feed.emitAudio({ timestamp: Math.round(start * 48_000) + samples, data: p.payload }, start + samples / 48_000);
  }
}

/** Where an Opus encoder's packets start: its first packet's RTP timestamp, that many seconds after the run's zero. */
export interface AudioStart {
  rtp: number;
  seconds: number;
}
