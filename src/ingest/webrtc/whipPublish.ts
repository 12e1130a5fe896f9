import dgram from "node:dgram";
import fs from "node:fs";
import path from "node:path";
import { PeerConnection, RtcpReceivingSession, type RtcConfig, type Track } from "node-datachannel";
import type { Logger } from "../../log";
import { spawnSupervised, type ProcessRegistry, type SupervisedProcess } from "../../media";
import { buildRtpBridgeArgs } from "../bridgeArgs";
import { isRtcp, startsH264Keyframe } from "./rtp";
import { OfferError, rtpInputSdp, withPublicAddress, type RestrictedOffer } from "./sdp";

/** Until the first keyframe, one is asked for (PLI) this often: the bridge starts on it. */
const KEYFRAME_REQUEST_MS = 1000;
/** ICE candidates are gathered before answering (no trickle): within this. */
const GATHER_TIMEOUT_MS = 5000;
/** The bitrate onair tells the sender it may use (REMB): the page or encoder sets its own cap. */
const RECEIVE_BITRATE = 20_000_000;
const AAC_BITRATE = 128_000;

export interface WhipPeerSettings {
  /** node-datachannel's configuration: the bind address and UDP port range of ICE. */
  rtc: RtcConfig;
  publicIp: string | undefined;
  /** A publisher silent this long has gone. */
  mediaTimeoutMs: number;
}

export interface WhipPublishDeps {
  log: Logger;
  registry: ProcessRegistry;
  ffmpegPath: string;
  /** Where the bridge's SDP file is written (removed at the end). */
  workDir: string;
  /** The local RTMP URL the bridge publishes to, under its ticket. */
  outputUrl: string;
  settings: WhipPeerSettings;
}

/**
 * One WHIP publish: a WebRTC peer (libdatachannel, the stack OBS's WHIP output uses) whose
 * H.264 and Opus RTP go, unencrypted, over loopback UDP to a bridge ffmpeg that republishes
 * them to the local RTMP server. Ends once: on DELETE, when the peer fails or falls silent,
 * or when the bridge exits (its publish refused or ended).
 */
export class WhipPublish {
  readonly ended: Promise<string>;
  private endWith!: (reason: string) => void;
  private reason: string | undefined;
  private pc: PeerConnection | undefined;
  private bridge: SupervisedProcess | undefined;
  private socket: dgram.Socket | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private lastMediaAt = Date.now();
  private keyframeSeen = false;
  private sdpFile: string;
  /** RTP packets and bytes received (the page's and the log's figures). */
  packets = 0;
  bytes = 0;

  constructor(
    readonly id: string,
    private readonly offer: RestrictedOffer,
    private readonly deps: WhipPublishDeps,
  ) {
    this.ended = new Promise((resolve) => (this.endWith = resolve));
    this.sdpFile = path.join(deps.workDir, `${id}.sdp`);
  }

  get isEnded(): boolean {
    return this.reason !== undefined;
  }

  /** Starts the bridge and the peer; resolves with the answer once candidates are gathered. */
  async start(): Promise<string> {
    const { deps, offer } = this;
    const [videoPort, audioPort] = await reserveUdpPairs(offer.audio ? 2 : 1);
    fs.mkdirSync(deps.workDir, { recursive: true });
    const sdp = rtpInputSdp({
      video: { port: videoPort!, payloadType: offer.video.payloadType, fmtp: offer.video.fmtp },
      ...(offer.audio ? { audio: { port: audioPort!, payloadType: offer.audio.payloadType, channels: offer.audio.channels } } : {}),
    });
    fs.writeFileSync(this.sdpFile, sdp);
    // The bridge listens before the first packet is forwarded: the PLI's keyframe reaches it.
    this.bridge = spawnSupervised(deps.registry, {
      command: deps.ffmpegPath,
      args: buildRtpBridgeArgs({ sdpFile: this.sdpFile, outputUrl: deps.outputUrl, hasAudio: !!offer.audio, audioBitrate: AAC_BITRATE }),
      log: deps.log,
      name: "webrtc bridge",
    });
    void this.bridge.ended.then((end) => this.end(end.requested ? "stopped" : `the bridge exited (${end.stderrTail.slice(-1)[0] ?? `code ${end.code}`})`));

    const socket = (this.socket = dgram.createSocket("udp4"));
    socket.on("error", (err) => deps.log.warn({ err }, "WebRTC forwarding socket error"));
    await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));

    const pc = (this.pc = new PeerConnection(`whip-${this.id}`, deps.settings.rtc));
    pc.onStateChange((state) => {
      deps.log.debug({ state }, "WebRTC peer state");
      if (state === "failed" || state === "closed") this.end(`the peer connection ${state}`);
    });
    pc.onTrack((track) => this.receive(track, track.mid() === offer.video.mid ? videoPort! : audioPort!, track.mid() === offer.video.mid));
    try {
      pc.setRemoteDescription(offer.sdp, "offer");
    } catch (err) {
      // libdatachannel refuses what it cannot use (no ICE credentials, no fingerprint).
      throw new OfferError(`the offer is not usable: ${(err as Error).message}`);
    }
    await this.gathered(pc);
    if (this.reason) throw new Error(`the publish ended while answering: ${this.reason}`);
    const answer = pc.localDescription()?.sdp;
    if (!answer) throw new Error("the peer produced no answer");

    this.timers.push(
      setInterval(() => {
        const silent = Date.now() - this.lastMediaAt;
        if (silent > deps.settings.mediaTimeoutMs) this.end(`no media for ${Math.round(silent / 1000)} s`);
      }, 500),
    );
    return deps.settings.publicIp ? withPublicAddress(answer, deps.settings.publicIp) : answer;
  }

  private receive(track: Track, port: number, isVideo: boolean): void {
    const rtcp = new RtcpReceivingSession();
    track.setMediaHandler(rtcp);
    track.onOpen(() => {
      track.requestBitrate(RECEIVE_BITRATE);
      if (!isVideo) return;
      track.requestKeyframe();
      const ask = setInterval(() => (this.keyframeSeen || this.isEnded ? clearInterval(ask) : track.requestKeyframe()), KEYFRAME_REQUEST_MS);
      this.timers.push(ask);
    });
    track.onMessage((packet) => {
      if (this.isEnded || isRtcp(packet)) return;
      this.lastMediaAt = Date.now();
      this.packets++;
      this.bytes += packet.length;
      if (isVideo && !this.keyframeSeen) {
        // Nothing before the first keyframe: the bridge could not decode it anyway.
        if (!startsH264Keyframe(packet)) return;
        this.keyframeSeen = true;
        this.deps.log.debug("first keyframe from the WebRTC publisher");
      }
      this.socket?.send(packet, port, "127.0.0.1");
    });
  }

  private gathered(pc: PeerConnection): Promise<void> {
    return new Promise((resolve) => {
      const started = Date.now();
      const check = setInterval(() => {
        if (pc.gatheringState() === "complete" || this.isEnded || Date.now() - started > GATHER_TIMEOUT_MS) {
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
  }

  /** Ends the publish (idempotent): the peer closed, the bridge stopped (its RTMP publish ends). */
  end(reason: string): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    for (const t of this.timers) clearInterval(t);
    try {
      this.pc?.close();
    } catch {
      // already closed
    }
    this.socket?.close();
    void this.bridge?.stop(2000);
    fs.rmSync(this.sdpFile, { force: true });
    this.deps.log.info({ reason, packets: this.packets, bytes: this.bytes }, "WebRTC publish ended");
    this.endWith(reason);
  }
}

/**
 * `count` loopback UDP ports p with p+1 free too (ffmpeg's RTP input takes p for RTP and p+1
 * for RTCP), found by binding them; released just before ffmpeg takes them.
 */
async function reserveUdpPairs(count: number): Promise<number[]> {
  const held: dgram.Socket[] = [];
  const ports: number[] = [];
  const bind = (port: number) =>
    new Promise<dgram.Socket | undefined>((resolve) => {
      const s = dgram.createSocket("udp4");
      s.once("error", () => {
        s.close();
        resolve(undefined);
      });
      s.bind(port, "127.0.0.1", () => resolve(s));
    });
  try {
    for (let tries = 0; ports.length < count && tries < 50; tries++) {
      const first = await bind(0);
      if (!first) continue;
      const port = first.address().port;
      const second = port < 65535 ? await bind(port + 1) : undefined;
      held.push(first);
      if (!second) continue;
      held.push(second);
      ports.push(port);
    }
  } finally {
    for (const s of held) s.close();
  }
  if (ports.length < count) throw new Error("no free loopback UDP ports for the WebRTC bridge");
  return ports;
}
