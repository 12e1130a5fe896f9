import { randomBytes } from "node:crypto";
import type { Logger } from "../log";
import { WEBRTC_VIEWER_PREFIX } from "../playback";
import { OfferError, restrictOffer } from "../webrtc";
import type { RealtimeFeeds } from "./feeds";
import { WhepViewer, type ViewerSettings, type ViewerStatus } from "./viewer";

/** A WHEP request refused: its HTTP status, what to tell the player, when to try again. */
export class WhepRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export interface WhepPlaybackDeps {
  feeds: RealtimeFeeds;
  settings: ViewerSettings;
  /** WebRTC viewers this node serves at most, and of one stream (past them: 503). */
  maxViewers: number;
  maxViewersPerStream: number;
  /** Offers not yet connected one client address may have (past it: 429); see WEBRTC_PENDING_PER_CLIENT. */
  pendingPerClient: number;
  /** A viewer is still watching (the viewer count's log, which forgets those not seen lately). */
  seen?(playbackId: string, viewerId: string): void;
  log: Logger;
}

/** Viewers are told to the viewer count this often (well within VIEWER_WINDOW_SECONDS). */
const SEEN_EVERY_MS = 5000;

/** Past a viewer cap, players are told to come back after this (or fall back to HLS). */
const FULL_RETRY_SECONDS = 10;

/**
 * Past pendingPerClient, come back after this. A player makes one offer at a time and connects
 * within a second; without the cap, one client's unanswered offers would hold every place of the
 * viewer caps (each for CONNECT_TIMEOUT_MS) and keep real viewers out.
 */
const PENDING_RETRY_SECONDS = 2;

/**
 * WebRTC playback (WHEP) on this node: a viewer per accepted offer, on the live feed of the
 * playback id it asked for. Who may watch is decided before (the playback gate, in http).
 */
export class WhepPlayback {
  private readonly viewers = new Map<string, WhepViewer>();
  /** The client address each viewer was asked from (absent for requests another node passed on). */
  private readonly clients = new Map<string, string>();
  private readonly seenTimer: NodeJS.Timeout;

  constructor(private readonly deps: WhepPlaybackDeps) {
    this.seenTimer = setInterval(() => this.tellSeen(), SEEN_EVERY_MS);
    this.seenTimer.unref();
  }

  private tellSeen(): void {
    for (const [id, v] of this.viewers) this.deps.seen?.(v.status().playbackId, `${WEBRTC_VIEWER_PREFIX}${id}`);
  }

  /** Whether the stream is live here, with something to play (or a reason it cannot be played over WebRTC, for play() to say). */
  playable(playbackId: string): boolean {
    const feed = this.deps.feeds.get(playbackId);
    return feed?.playable === true || feed?.refusal !== undefined;
  }

  /** `client`: the asking address (see clientKey; for a request another node passed on, the one it names), undefined if none is known. */
  async play(playbackId: string, offerSdp: () => string, client?: string): Promise<{ id: string; answer: string }> {
    const feed = this.deps.feeds.get(playbackId);
    const refusal = feed?.refusal;
    if (refusal) throw new WhepRefusal(404, refusal);
    if (!feed || !feed.playable) throw new WhepRefusal(404, "the stream is not live (or not on this node)");
    if (this.viewers.size >= this.deps.maxViewers) throw new WhepRefusal(503, "this node serves as many WebRTC viewers as it may (WEBRTC_MAX_VIEWERS): play HLS, or try again later", FULL_RETRY_SECONDS);
    // Viewers still answering count: the feed hears of a viewer only once its answer is made.
    if (this.viewersOf(playbackId) >= this.deps.maxViewersPerStream) throw new WhepRefusal(503, "this stream has as many WebRTC viewers as it may (WEBRTC_MAX_VIEWERS_PER_STREAM): play HLS, or try again later", FULL_RETRY_SECONDS);
    this.checkPending(client);
    let offer;
    try {
      offer = restrictOffer(offerSdp(), "play");
    } catch (err) {
      if (err instanceof OfferError) throw new WhepRefusal(400, err.message);
      throw err;
    }
    const id = randomBytes(18).toString("base64url");
    const viewer = new WhepViewer(id, feed, offer, this.deps.settings, this.deps.log.child({ playbackId, whepId: id }));
    this.viewers.set(id, viewer);
    if (client !== undefined) this.clients.set(id, client);
    void viewer.ended.then(() => {
      this.viewers.delete(id);
      this.clients.delete(id);
    });
    try {
      const answer = await viewer.answer();
      this.deps.log.info({ playbackId, whepId: id, rendition: viewer.startRendition }, "WHEP viewer answered");
      this.deps.seen?.(playbackId, `${WEBRTC_VIEWER_PREFIX}${id}`);
      return { id, answer };
    } catch (err) {
      const endedFirst = viewer.isEnded;
      viewer.end("its start failed");
      if (endedFirst && !(err instanceof OfferError)) throw new WhepRefusal(404, "the stream ended (or stopped being playable over WebRTC) while the viewer was being answered");
      if (err instanceof OfferError) throw new WhepRefusal(400, err.message);
      throw err;
    }
  }

  /** Refuses (429) a client address at its cap of offers not yet connected; checked again by play(). */
  checkPending(client: string | undefined): void {
    const cap = this.deps.pendingPerClient;
    if (client !== undefined && this.pendingFrom(client) >= cap) throw new WhepRefusal(429, `this address has ${cap} WebRTC offers not yet connected (WEBRTC_PENDING_PER_CLIENT): connect those first`, PENDING_RETRY_SECONDS);
  }

  private pendingFrom(client: string): number {
    let n = 0;
    for (const [id, c] of this.clients) if (c === client && !this.viewers.get(id)?.isConnected) n++;
    return n;
  }

  private viewersOf(playbackId: string): number {
    let n = 0;
    for (const v of this.viewers.values()) if (v.playbackId === playbackId) n++;
    return n;
  }

  /** The 201 has been sent. */
  answered(id: string): void {
    this.viewers.get(id)?.answered();
  }

  status(playbackId: string, id: string): ViewerStatus | undefined {
    const v = this.viewers.get(id);
    const s = v?.status();
    return s && s.playbackId === playbackId ? s : undefined;
  }

  /** DELETE: ends the viewer; false if unknown. */
  end(playbackId: string, id: string): boolean {
    if (!this.status(playbackId, id)) return false;
    this.viewers.get(id)!.end("the player ended it (DELETE)");
    return true;
  }

  /** WebRTC viewers by playback id, now. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const v of this.viewers.values()) {
      const id = v.status().playbackId;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    return counts;
  }

  get size(): number {
    return this.viewers.size;
  }

  close(): void {
    clearInterval(this.seenTimer);
    for (const v of [...this.viewers.values()]) v.end("the server is shutting down");
  }
}
