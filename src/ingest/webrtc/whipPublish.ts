import dgram from "node:dgram";
import fs from "node:fs";
import path from "node:path";
import { PeerConnection, RtcpReceivingSession, type RtcConfig, type Track } from "node-datachannel";
import type { Logger } from "../../log";
import { spawnSupervised, type ProcessRegistry, type SupervisedProcess } from "../../media";
import { buildRtpBridgeArgs } from "../bridgeArgs";
import { addOfferCandidates, gathered, isRtcp, OfferError, REMOTE_CANDIDATES_DELAY_MS, startsH264Keyframe, withPublicAddress, type RestrictedOffer } from "../../webrtc";
import { BRIDGE_ADDRESS, rtpInputSdp } from "./bridgeSdp";

/** The bridge ffmpeg binds its RTP ports within this (it starts in tens of ms). */
const BRIDGE_READY_TIMEOUT_MS = 3000;
/** Until the first keyframe, one is asked for (PLI) this often: the bridge starts on it. */
const KEYFRAME_REQUEST_MS = 1000;
/** The bitrate onair tells the sender it may use (REMB): the page or encoder sets its own cap. */
const RECEIVE_BITRATE = 20_000_000;
const AAC_BITRATE = 128_000;
/**
 * The one address onair forwards RTP from (its socket is bound to it), named in the bridge's
 * source filter: what comes from any other address, on loopback or not, never reaches a stream.
 */
const FORWARD_ADDRESS = "127.0.0.1";

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
  /** The bridge has started as `pid`: its ticket admits that process's connection only. */
  bridgeStarted(pid: number | undefined): void;
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
  private readonly tracks: Track[] = [];
  private lastMediaAt = Date.now();
  private keyframeSeen = false;
  /** ffmpeg has bound its RTP ports: what is sent before that is lost, the first keyframe with it. */
  private bridgeReady = false;
  private videoTrack: Track | undefined;
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
    this.throwIfEnded();
    fs.mkdirSync(deps.workDir, { recursive: true });
    const sdp = rtpInputSdp({
      video: { port: videoPort!, payloadType: offer.video.payloadType, fmtp: offer.video.fmtp },
      ...(offer.audio ? { audio: { port: audioPort!, payloadType: offer.audio.payloadType, channels: offer.audio.channels } } : {}),
      from: FORWARD_ADDRESS,
    });
    fs.writeFileSync(this.sdpFile, sdp);
    // The bridge listens before the first packet is forwarded: the PLI's keyframe reaches it.
    this.bridge = spawnSupervised(deps.registry, {
      command: deps.ffmpegPath,
      args: buildRtpBridgeArgs({ sdpFile: this.sdpFile, outputUrl: deps.outputUrl, hasAudio: !!offer.audio, audioBitrate: AAC_BITRATE, bindAddress: BRIDGE_ADDRESS }),
      log: deps.log,
      name: "webrtc bridge",
    });
    deps.bridgeStarted(this.bridge.pid);
    void this.bridge.ended.then((end) => this.end(end.requested ? "stopped" : `the bridge exited (${end.stderrTail.slice(-1)[0] ?? `code ${end.code}`})`));
    const ports = offer.audio ? [videoPort!, audioPort!] : [videoPort!];
    const started = Date.now();
    const ready = setInterval(() => {
      if (!udpPortsBound(ports) && Date.now() - started < BRIDGE_READY_TIMEOUT_MS) return;
      clearInterval(ready);
      this.bridgeReady = true;
      // A keyframe now: the one that may have come before went nowhere.
      this.guarded(() => void (this.videoTrack?.isOpen() && this.videoTrack.requestKeyframe()));
    }, 10);
    this.timers.push(ready);

    const socket = (this.socket = dgram.createSocket("udp4"));
    socket.on("error", (err) => deps.log.warn({ err }, "WebRTC forwarding socket error"));
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.bind(0, FORWARD_ADDRESS, () => {
        socket.off("error", reject);
        resolve();
      });
    });
    this.throwIfEnded();

    const pc = (this.pc = new PeerConnection(`whip-${this.id}`, deps.settings.rtc));
    // Native callbacks: a throw in one would take the process down, so none may escape.
    pc.onStateChange((state) =>
      this.guarded(() => {
        deps.log.debug({ state }, "WebRTC peer state");
        if (state === "failed" || state === "closed") this.end(`the peer connection ${state}`);
      }),
    );
    pc.onTrack((track) =>
      this.guarded(() => {
        this.tracks.push(track);
        const mid = track.mid();
        if (mid === offer.video.mid) {
          this.videoTrack = track;
          this.receive(track, videoPort!, true);
        }
        else if (offer.audio && mid === offer.audio.mid) this.receive(track, audioPort!, false);
        else track.close(); // restrictOffer lets no other media through; never forward one
      }),
    );
    try {
      pc.setRemoteDescription(offer.sdp, "offer");
    } catch (err) {
      // libdatachannel refuses what it cannot use (no ICE credentials, no fingerprint).
      throw new OfferError(`the offer is not usable: ${(err as Error).message}`);
    }
    await gathered(pc, () => this.isEnded);
    this.throwIfEnded();
    const answer = pc.localDescription()?.sdp;
    if (!answer) throw new Error("the peer produced no answer");

    // Silence counts from the answer: ICE and DTLS take their moment before any media.
    this.lastMediaAt = Date.now();
    this.timers.push(
      setInterval(() => {
        const silent = Date.now() - this.lastMediaAt;
        if (silent > deps.settings.mediaTimeoutMs) this.end(`no media for ${Math.round(silent / 1000)} s`);
      }, 500),
    );
    return deps.settings.publicIp ? withPublicAddress(answer, deps.settings.publicIp) : answer;
  }

  /** The answer has left for the publisher: see REMOTE_CANDIDATES_DELAY_MS. */
  answered(): void {
    this.timers.push(
      setTimeout(
        () => this.guarded(() => this.pc && !this.isEnded && addOfferCandidates(this.pc, this.offer, this.deps.settings.rtc.bindAddress, (err, candidate) => this.deps.log.debug({ err, candidate }, "remote candidate not usable"))),
        REMOTE_CANDIDATES_DELAY_MS,
      ),
    );
  }

  private throwIfEnded(): void {
    if (this.reason !== undefined) throw new PublishEnded(this.reason);
  }

  private guarded(work: () => void): void {
    try {
      work();
    } catch (err) {
      this.deps.log.error({ err }, "error in a WebRTC callback: publish ended");
      this.end("internal error");
    }
  }

  private receive(track: Track, port: number, isVideo: boolean): void {
    const rtcp = new RtcpReceivingSession();
    track.setMediaHandler(rtcp);
    track.onOpen(() =>
      this.guarded(() => {
        track.requestBitrate(RECEIVE_BITRATE);
        if (!isVideo) return;
        track.requestKeyframe();
        const ask = setInterval(() => this.guarded(() => (this.keyframeSeen || this.isEnded ? clearInterval(ask) : track.requestKeyframe())), KEYFRAME_REQUEST_MS);
        this.timers.push(ask);
      }),
    );
    track.onMessage((packet) =>
      this.guarded(() => {
        if (this.isEnded || isRtcp(packet)) return;
        this.lastMediaAt = Date.now();
        this.packets++;
        this.bytes += packet.length;
        if (!this.bridgeReady) return;
        if (isVideo && !this.keyframeSeen) {
          // Nothing before the first keyframe: the bridge could not decode it anyway.
          if (!startsH264Keyframe(packet)) return;
          this.keyframeSeen = true;
          this.deps.log.debug("first keyframe from the WebRTC publisher");
        }
        this.socket?.send(packet, port, BRIDGE_ADDRESS);
      }),
    );
  }

  /**
   * Ends the publish (idempotent): tracks and peer closed (their native callbacks released),
   * the bridge stopped (its RTMP publish ends), the SDP file removed. Every step is attempted.
   */
  end(reason: string): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    const attempt = (step: () => unknown) => {
      try {
        step();
      } catch (err) {
        this.deps.log.warn({ err }, "a step of ending a WebRTC publish failed");
      }
    };
    try {
      for (const t of this.timers) clearInterval(t);
      for (const track of this.tracks) attempt(() => track.close());
      attempt(() => this.pc?.close());
      attempt(() => this.socket?.close());
      attempt(() => void this.bridge?.stop(2000));
      attempt(() => fs.rmSync(this.sdpFile, { force: true }));
      this.deps.log.info({ reason, packets: this.packets, bytes: this.bytes }, "WebRTC publish ended");
    } finally {
      this.endWith(reason);
    }
  }
}

/** The publish was ended (replaced, DELETE, shutdown) while it was being answered. */
export class PublishEnded extends Error {}

/** Whether each of `ports` has a UDP socket bound to it on this machine (Linux's /proc/net/udp{,6}). */
export function udpPortsBound(ports: number[]): boolean {
  let table = "";
  for (const file of ["/proc/net/udp", "/proc/net/udp6"]) {
    try {
      table += fs.readFileSync(file, "utf8");
    } catch {
      // no IPv6, or not Linux: judged by the other table
    }
  }
  const bound = new Set<number>();
  for (const line of table.split("\n")) {
    const local = line.trim().split(/\s+/)[1];
    const hex = local?.split(":")[1];
    if (hex) bound.add(parseInt(hex, 16));
  }
  return ports.every((p) => bound.has(p));
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
      s.bind(port, BRIDGE_ADDRESS, () => resolve(s));
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
