import {
  Audio,
  H264RtpPacketizer,
  PeerConnection,
  RtcpNackResponder,
  RtcpSrReporter,
  RtpPacketizationConfig,
  RtpPacketizer,
  Video,
  type RtcConfig,
  type Track,
} from "node-datachannel";
import type { Logger } from "../log";
import { OPUS_BITRATE } from "../media";
import { addOfferCandidates, gathered, OfferError, PLAYOUT_DELAY_URI, randomSsrc, readRtcp, REMOTE_CANDIDATES_DELAY_MS, withPublicAddress, type RestrictedOffer } from "../webrtc";
import { chooseRung, LOSS_HIGH, LOSS_LOW, lossEstimate, lossLimitLifts, lossStepDue } from "./abr";
import type { AudioFrame, FeedListener, LiveFeed, VideoFrame } from "./feed";

export interface ViewerSettings {
  /** node-datachannel's configuration: the bind address and UDP port range of ICE. */
  rtc: RtcConfig;
  publicIp: string | undefined;
  /** The bandwidth a viewer is assumed to have until its player says (REMB). */
  startBitrate: number;
}

export interface ViewerStatus {
  id: string;
  playbackId: string;
  /** The rendition sent now; size and bit rate are null for a copied source. */
  rendition: { index: number; name: string; width: number | null; height: number | null; bitrate: number | null } | null;
  /** The player's own estimate (REMB), bits per second. */
  estimatedBitrate: number | null;
  /** onair's estimate from the loss the player reports, when loss has limited it. */
  lossLimitedBitrate: number | null;
  framesSent: number;
  /** Frames libdatachannel would not take (its send queue full, the transport gone). */
  framesDropped: number;
  /** Opus packets sent, and those libdatachannel would not take. */
  audioSent: number;
  audioDropped: number;
  switches: number;
  keyframeRequests: number;
  nacks: number;
}

/** The longest a player may hold a frame before showing it, in 10 ms units (the playout-delay extension). */
const PLAYOUT_DELAY_MAX = 10;
/** The RTP packets' payload size: what every path carries without fragmenting (with SRTP and headers). */
const MAX_PAYLOAD = 1200;
/** A viewer whose ICE is disconnected this long has gone (it reconnects within this if it can). */
const DISCONNECTED_GRACE_MS = 5000;
/** A viewer not connected this long after its answer never will be: its place under the caps is given back. */
const CONNECT_TIMEOUT_MS = 15_000;

/** A sending track: its packetizer's configuration (the timestamp to stamp next) and where its clock started. */
interface Sender {
  track: Track;
  config: RtpPacketizationConfig;
  base: number;
  ssrc: number;
}

/**
 * One WHEP viewer: a WebRTC peer that sends one rendition of a live feed's video, switching
 * at keyframes as the player's bandwidth estimate (REMB) says, and its Opus audio. Frames go
 * out as the feed gets them; libdatachannel packetizes them (RFC 6184), answers NACKs from
 * its buffer and sends sender reports. Ends once: DELETE, a failed or closed peer, the stream's end.
 */
export class WhepViewer implements FeedListener {
  readonly ended: Promise<string>;
  private endWith!: (reason: string) => void;
  private reason: string | undefined;
  private pc: PeerConnection | undefined;
  private videoSender: Sender | undefined;
  private audioSender: Sender | undefined;
  private unlisten: (() => void) | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private disconnectedAt: NodeJS.Timeout | undefined;
  private connected = false;
  /** The rendition sent now (once started), and the one the estimate asks for. */
  private current: number | undefined;
  private target: number;
  /** The first frame's timestamp (90 kHz): the viewer's clocks count from it. */
  private origin: number | undefined;
  private lastSent = -1;
  /**
   * A keyframe of the current rendition held back while a switch waits for the target's keyframe
   * of the same instant: nothing of the current rendition decodes without it, so its frames wait
   * too, until the switch or (the target's never came) its next keyframe.
   */
  private held = false;
  private estimate: number | null = null;
  /** The loss-based estimate (see lossEstimate): Infinity while loss has not limited it. */
  private lossLimit = Infinity;
  /** When the loss rule last moved it (ms; see lossStepDue). */
  private lossSteppedAt = -Infinity;
  /** When a report last showed loss (ms; see lossLimitLifts). */
  private lossSeenAt = -Infinity;
  private framesSent = 0;
  private framesDropped = 0;
  private audioSent = 0;
  private audioDropped = 0;
  private switches = 0;
  private keyframeRequests = 0;
  private nacks = 0;

  constructor(
    readonly id: string,
    private readonly feed: LiveFeed,
    private readonly offer: RestrictedOffer,
    private readonly settings: ViewerSettings,
    private readonly log: Logger,
  ) {
    this.ended = new Promise((resolve) => (this.endWith = resolve));
    this.target = this.choose(settings.startBitrate) ?? 0;
  }

  /** The rendition the viewer starts on (at the next keyframe), by name. */
  get startRendition(): string | undefined {
    return this.feed.renditions.find((r) => r.index === this.target)?.name;
  }

  get playbackId(): string {
    return this.feed.playbackId;
  }

  get isEnded(): boolean {
    return this.reason !== undefined;
  }

  /** ICE and DTLS are done: the player is receiving (or able to). */
  get isConnected(): boolean {
    return this.connected;
  }

  /** Sets the peer up from the offer and resolves with the answer (candidates gathered). */
  async answer(): Promise<string> {
    // The answer is made here, after onair's own tracks (their SSRCs, feedback) are added.
    const pc = (this.pc = new PeerConnection(`whep-${this.id}`, { ...this.settings.rtc, disableAutoNegotiation: true }));
    pc.onStateChange((state) => this.guarded(() => this.peerState(state)));
    try {
      pc.setRemoteDescription(this.offer.sdp, "offer");
    } catch (err) {
      throw new OfferError(`the offer is not usable: ${(err as Error).message}`);
    }
    this.videoSender = this.addVideo(pc);
    if (this.offer.audio) this.audioSender = this.addAudio(pc, this.offer.audio);
    pc.setLocalDescription();
    await gathered(pc, () => this.isEnded);
    if (this.isEnded) throw new Error(`the viewer ended while answering (${this.reason})`);
    const answer = pc.localDescription()?.sdp;
    if (!answer) throw new Error("the peer produced no answer");
    this.unlisten = this.feed.listen(this);
    if (this.isEnded) throw new Error(`the viewer ended while answering (${this.reason})`);
    // A rendition lost while the answer was made was not heard of: choose again.
    if (this.feed.isLost(this.target)) this.retarget();
    if (this.isEnded) throw new Error(`the viewer ended while answering (${this.reason})`);
    // From the answer, not from its delivery: an answer that never reaches its player (the POST's
    // connection gone) must give its place back too.
    this.timers.push(setTimeout(() => !this.connected && this.end("it never connected"), CONNECT_TIMEOUT_MS));
    return this.settings.publicIp ? withPublicAddress(answer, this.settings.publicIp) : answer;
  }

  /** The answer has left for the player: see REMOTE_CANDIDATES_DELAY_MS. */
  answered(): void {
    const check = () => this.pc && !this.isEnded && addOfferCandidates(this.pc, this.offer, this.settings.rtc.bindAddress, (err, candidate) => this.log.debug({ err, candidate }, "remote candidate not usable"));
    this.timers.push(setTimeout(() => this.guarded(check), REMOTE_CANDIDATES_DELAY_MS));
  }

  status(): ViewerStatus {
    const r = this.current === undefined ? undefined : this.feed.renditions.find((x) => x.index === this.current);
    const e = r?.encode;
    return {
      id: this.id,
      playbackId: this.feed.playbackId,
      rendition: r ? { index: r.index, name: r.name, width: e?.width ?? null, height: e?.height ?? null, bitrate: e?.bitrate ?? null } : null,
      estimatedBitrate: this.estimate,
      lossLimitedBitrate: Number.isFinite(this.lossLimit) ? Math.round(this.lossLimit) : null,
      framesSent: this.framesSent,
      framesDropped: this.framesDropped,
      audioSent: this.audioSent,
      audioDropped: this.audioDropped,
      switches: this.switches,
      keyframeRequests: this.keyframeRequests,
      nacks: this.nacks,
    };
  }

  video(frame: VideoFrame): void {
    const sender = this.videoSender;
    if (this.isEnded || !sender?.track.isOpen()) return;
    if (!this.startsHere(frame)) return;
    this.origin ??= frame.timestamp;
    this.lastSent = frame.timestamp;
    sender.config.timestamp = (sender.base + frame.timestamp - this.origin) >>> 0;
    this.guarded(() => {
      if (sender.track.sendMessageBinary(frame.data)) this.framesSent++;
      else this.framesDropped++;
    });
  }

  audio(frame: AudioFrame): void {
    const sender = this.audioSender;
    if (this.isEnded || this.origin === undefined || !sender?.track.isOpen()) return;
    // The audio clock counts from the same instant as the video's: sender reports line them up.
    const origin = Math.round((this.origin / 90_000) * 48_000);
    if (frame.timestamp < origin) return;
    sender.config.timestamp = (sender.base + frame.timestamp - origin) >>> 0;
    this.guarded(() => {
      if (sender.track.sendMessageBinary(frame.data)) this.audioSent++;
      else this.audioDropped++;
    });
  }

  /** The feed's session ended. */
  feedEnded(): void {
    this.end("the stream ended");
  }

  /**
   * Whether this frame is one to send: frames of the current rendition, and at a keyframe of
   * the target rendition, the switch (never back in time). While a switch waits for the
   * target's keyframe, the current rendition stops at its own keyframe (the same instant, the
   * ladder's keyframes are aligned, but its pipe may deliver it first): its frames are held
   * until the target's keyframe comes, and should it not, the current rendition goes on from
   * its next keyframe, never from a frame whose keyframe was held back.
   */
  private startsHere(frame: VideoFrame): boolean {
    if (frame.rendition === this.target && frame.keyframe && this.current !== this.target && frame.timestamp > this.lastSent) {
      if (this.current !== undefined) this.switches++;
      this.current = this.target;
      this.held = false;
      return true;
    }
    if (frame.rendition !== this.current) return false;
    if (this.held) {
      if (!frame.keyframe) return false;
      this.held = false;
      this.target = this.current;
      return true;
    }
    if (this.current !== this.target && frame.keyframe) {
      this.held = true;
      return false;
    }
    return true;
  }

  /** The rendition the estimates carry, of those the feed can still send; undefined: none. */
  private choose(estimate: number): number | undefined {
    // A copied source is the only rendition: its bit rate does not matter.
    const rungs = this.feed.renditions.filter((r) => !this.feed.isLost(r.index)).map((r) => ({ index: r.index, bitrate: r.encode?.bitrate ?? 0 }));
    if (rungs.length === 0) return undefined;
    return chooseRung(rungs, Math.min(estimate, this.lossLimit), this.offer.audio ? OPUS_BITRATE : 0, this.current);
  }

  /** Chooses again from both estimates; with no rendition left to send, the viewer ends. */
  private retarget(): void {
    const target = this.choose(this.estimate ?? this.settings.startBitrate);
    if (target === undefined) return this.end("no rendition of the stream can be sent over WebRTC now");
    this.target = target;
  }

  /** What rendition `index` costs to send (bits per second); Infinity for a copied source (no ladder to step down). */
  private rate(index: number | undefined): number {
    const bitrate = this.feed.renditions.find((r) => r.index === index)?.encode?.bitrate;
    return bitrate === undefined ? Infinity : bitrate + (this.offer.audio ? OPUS_BITRATE : 0);
  }

  /** The loss rule's step for a report of this loss on the video, when one is due. */
  private lossStep(fraction: number): boolean {
    const now = performance.now();
    if (fraction >= LOSS_LOW) this.lossSeenAt = now;
    if (Number.isFinite(this.lossLimit) && lossLimitLifts(fraction, now - this.lossSeenAt)) {
      this.lossLimit = Infinity;
      return true;
    }
    if (this.current === undefined || !lossStepDue(fraction, now - this.lossSteppedAt)) return false;
    // Nothing to climb from while loss has not limited it: such a report is no step.
    if (!Number.isFinite(this.lossLimit) && fraction < LOSS_HIGH) return false;
    this.lossSteppedAt = now;
    const lowest = Math.min(...this.feed.renditions.map((r) => this.rate(r.index)));
    this.lossLimit = lossEstimate(this.lossLimit, this.rate(this.current), fraction, Number.isFinite(lowest) ? lowest : 0);
    return true;
  }

  private addVideo(pc: PeerConnection): Sender {
    const { mid, payloadType, fmtp } = this.offer.video;
    const media = new Video(mid, "SendOnly");
    // With its feedback: nack (retransmission), nack pli (keyframe requests), goog-remb (the player's estimate).
    media.addH264Codec(payloadType, fmtp ?? "packetization-mode=1;profile-level-id=42e01f");
    const ssrc = randomSsrc();
    media.addSSRC(ssrc, "onair", "onair", "video");
    const { playoutDelayId } = this.offer.video;
    if (playoutDelayId) media.parseSdpLine(`a=extmap:${playoutDelayId} ${PLAYOUT_DELAY_URI}`);
    const track = pc.addTrack(media);
    const config = new RtpPacketizationConfig(ssrc, "onair", payloadType, 90_000);
    if (playoutDelayId) {
      // Frames are sent as they are encoded: the player may show them at once, and hold them
      // no longer than PLAYOUT_DELAY_MAX (in 10 ms units) to smooth what the network jitters.
      config.playoutDelayId = playoutDelayId;
      config.playoutDelayMin = 0;
      config.playoutDelayMax = PLAYOUT_DELAY_MAX;
    }
    const packetizer = new H264RtpPacketizer("Length", config, MAX_PAYLOAD);
    packetizer.addToChain(new RtcpSrReporter(config));
    packetizer.addToChain(new RtcpNackResponder());
    track.setMediaHandler(packetizer);
    track.onMessage((packet) => this.guarded(() => this.feedback(packet)));
    return { track, config, base: config.timestamp, ssrc };
  }

  private addAudio(pc: PeerConnection, offered: NonNullable<RestrictedOffer["audio"]>): Sender {
    const media = new Audio(offered.mid, "SendOnly");
    media.addOpusCodec(offered.payloadType, offered.fmtp ?? "minptime=10;useinbandfec=1");
    const ssrc = randomSsrc();
    media.addSSRC(ssrc, "onair", "onair", "audio");
    const track = pc.addTrack(media);
    const config = new RtpPacketizationConfig(ssrc, "onair", offered.payloadType, 48_000);
    const packetizer = new RtpPacketizer(config);
    packetizer.addToChain(new RtcpSrReporter(config));
    packetizer.addToChain(new RtcpNackResponder());
    track.setMediaHandler(packetizer);
    return { track, config, base: config.timestamp, ssrc };
  }

  /**
   * What the player says of the video: its estimate (REMB) and the loss in its receiver reports
   * move the target rendition. NACKs are answered from libdatachannel's buffer; a PLI is
   * answered by the ladder's next keyframe (every second), which the viewer sends as it comes.
   */
  private feedback(packet: Buffer): void {
    let moved = false;
    for (const item of readRtcp(packet)) {
      if (item.kind === "remb") {
        this.estimate = item.bitrate;
        moved = true;
      } else if (item.kind === "loss") {
        // The video's own block only: a compound report may carry the audio's too.
        if (item.ssrc === this.videoSender?.ssrc && this.lossStep(item.fraction)) moved = true;
      } else if (item.kind === "keyframe") this.keyframeRequests++;
      else if (item.kind === "nack") this.nacks += item.packets;
    }
    if (moved) this.retarget();
  }

  /** The feed can no longer send this rendition (its frames could not be read): move off it. */
  renditionLost(): void {
    // held stays as it is: startsHere lets it go at the switch or at the current rendition's
    // next keyframe, never before a keyframe that was held back.
    if (!this.isEnded) this.guarded(() => this.retarget());
  }

  private peerState(state: string): void {
    this.log.debug({ state }, "WHEP viewer peer state");
    if (state === "failed" || state === "closed") return this.end(`the peer connection ${state}`);
    if (state === "connected") this.connected = true;
    clearTimeout(this.disconnectedAt);
    this.disconnectedAt = undefined;
    if (state === "disconnected") this.disconnectedAt = setTimeout(() => this.end("the peer stayed disconnected"), DISCONNECTED_GRACE_MS);
  }

  private guarded(work: () => void): void {
    try {
      work();
    } catch (err) {
      this.log.error({ err }, "error in a WHEP viewer's callback: viewer ended");
      this.end("internal error");
    }
  }

  /** Ends the viewer (idempotent): off the feed, tracks and peer closed. */
  end(reason: string): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    for (const t of this.timers) clearTimeout(t);
    clearTimeout(this.disconnectedAt);
    this.unlisten?.();
    for (const step of [() => this.videoSender?.track.close(), () => this.audioSender?.track.close(), () => this.pc?.close()]) {
      try {
        step();
      } catch (err) {
        this.log.warn({ err }, "a step of ending a WHEP viewer failed");
      }
    }
    this.log.info({ reason, framesSent: this.framesSent, switches: this.switches }, "WHEP viewer ended");
    this.endWith(reason);
  }
}
