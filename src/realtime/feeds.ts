import dgram from "node:dgram";
import type { Logger } from "../log";
import type { Rendition } from "../shapes";
import { readRtp, type RtpPacket } from "../webrtc";
import { LiveFeed, type AudioRoutes } from "./feed";

/**
 * The node's live feeds for WebRTC playback, by playback id, and the one loopback socket every
 * pipeline's Opus RTP arrives on (each run's by its own random SSRC; anything from another
 * address, or with an SSRC no run was given, is dropped).
 */
export class RealtimeFeeds {
  private readonly feeds = new Map<string, LiveFeed>();
  private readonly routes = new Map<number, (packet: RtpPacket) => void>();
  private socket: dgram.Socket | undefined;
  private port: number | undefined;

  constructor(private readonly log: Logger) {}

  /**
   * Binds the audio socket (before any session opens); `withAudio` false (an ffmpeg without
   * libopus): no audio socket, WebRTC viewers get video only.
   */
  async listen(withAudio = true): Promise<void> {
    if (!withAudio) return;
    const socket = dgram.createSocket("udp4");
    socket.on("error", (err) => this.log.warn({ err }, "WebRTC playback: audio socket error"));
    socket.on("message", (packet, from) => {
      if (from.address !== "127.0.0.1") return;
      const rtp = readRtp(packet);
      if (rtp) this.routes.get(rtp.ssrc)?.(rtp);
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.bind(0, "127.0.0.1", () => {
        socket.off("error", reject);
        resolve();
      });
    });
    this.socket = socket;
    this.port = socket.address().port;
  }

  /** A session's feed, found by its playback id until `remove`. */
  open(playbackId: string, renditions: Rendition[]): LiveFeed {
    const feed = new LiveFeed(playbackId, renditions, this.audioRoutes(), this.log.child({ playbackId }));
    this.feeds.get(playbackId)?.end();
    this.feeds.set(playbackId, feed);
    return feed;
  }

  get(playbackId: string): LiveFeed | undefined {
    return this.feeds.get(playbackId);
  }

  /** The session ended: its viewers are told; a newer feed of the same playback id stays. */
  remove(playbackId: string, feed: LiveFeed): void {
    feed.end();
    if (this.feeds.get(playbackId) === feed) this.feeds.delete(playbackId);
  }

  close(): void {
    for (const feed of this.feeds.values()) feed.end();
    this.feeds.clear();
    this.socket?.close();
    this.socket = undefined;
  }

  private audioRoutes(): AudioRoutes | undefined {
    if (this.port === undefined) return undefined;
    return { port: this.port, route: (ssrc, to) => this.routes.set(ssrc, to), unroute: (ssrc) => this.routes.delete(ssrc) };
  }
}
