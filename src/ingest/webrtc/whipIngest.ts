import { randomBytes } from "node:crypto";
import fs from "node:fs";
import type { Logger } from "../../log";
import type { ProcessRegistry } from "../../media";
import type { BridgeTickets } from "../bridges";
import { OfferError, restrictOffer } from "../../webrtc";
import type { PublishRefusal, PublishRefusalKind } from "../../shapes";
import { PublishEnded, WhipPublish, type WhipPeerSettings } from "./whipPublish";

/** The one admission's refusals as WHIP's HTTP statuses (an RTMP publisher hears them as onStatus codes). */
export const WHIP_REFUSAL_STATUS: Record<PublishRefusalKind, number> = { unknown: 401, suspended: 403, elsewhere: 409, unavailable: 503 };

/** A WHIP request onair refuses: its HTTP status and why. */
export class WhipRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface WhipIngestDeps {
  /**
   * The admission every protocol shares (SessionManager.checkPublish); an admitted publish
   * holds its place under `holder` (caps, capacity) until `release(holder)`.
   */
  check(streamKey: string, holder: string): Promise<{ stream: { id: string; playbackId: string | null } } | { refusal: PublishRefusal }>;
  release(holder: string): void;
  tickets: BridgeTickets;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
  workDir: string;
  /** The local RTMP URL a bridge publishes to under its ticket. */
  rtmpUrl(ticket: string): string;
  settings: WhipPeerSettings;
  log: Logger;
}

interface Entry {
  publish: WhipPublish;
  streamId: string;
  playbackId: string | null;
  createdAt: number;
}

/** What a WHIP resource shows of itself (GET, for the broadcast page). */
export interface WhipStatus {
  id: string;
  streamId: string;
  /** Where viewers watch it (/play/<playbackId>). */
  playbackId: string | null;
  createdAt: number;
  packets: number;
  bytes: number;
}

/**
 * WHIP (RFC 9725) publishes on this node, by resource id: each admitted like an RTMP publish,
 * then bridged into the RTMP ingest under a ticket so it becomes a session like any other.
 * A new publish of a stream replaces the one before it, as a new RTMP publisher does.
 */
export class WhipIngest {
  private readonly entries = new Map<string, Entry>();
  private closed = false;

  constructor(private readonly deps: WhipIngestDeps) {
    // SDP files a previous run left behind (it died without ending its publishes).
    fs.rmSync(deps.workDir, { recursive: true, force: true });
  }

  /**
   * Admits and answers an offer: the resource id and the answer SDP, or a WhipRefusal. The key
   * is checked before the offer is read (`offerText` throws a WhipRefusal for a body that is
   * no offer) or parsed: who has no key learns nothing of what onair accepts.
   */
  async publish(streamKey: string, offerText: () => string): Promise<{ id: string; answer: string; streamId: string }> {
    const { deps } = this;
    if (this.closed) throw new WhipRefusal(503, "the server is shutting down: publish again in a moment");
    const id = randomBytes(18).toString("base64url");
    const holder = `whip:${id}`;
    const decision = await deps.check(streamKey, holder);
    if ("refusal" in decision) throw new WhipRefusal(WHIP_REFUSAL_STATUS[decision.refusal.kind], decision.refusal.reason);
    const offer = (() => {
      try {
        return restrictOffer(offerText());
      } catch (err) {
        deps.release(holder);
        if (err instanceof OfferError) throw new WhipRefusal(400, err.message);
        throw err;
      }
    })();
    if (this.closed || !deps.ffmpegPath) {
      deps.release(holder);
      throw new WhipRefusal(503, this.closed ? "the server is shutting down: publish again in a moment" : "ffmpeg is not available on this server");
    }
    const streamId = decision.stream.id;

    const ticket = deps.tickets.issue({ streamKey, protocol: "webrtc" });
    const log = deps.log.child({ streamId, whipId: id });
    const publish = new WhipPublish(id, offer, {
      log,
      registry: deps.registry,
      ffmpegPath: deps.ffmpegPath,
      workDir: deps.workDir,
      outputUrl: deps.rtmpUrl(ticket),
      bridgeStarted: (pid) => deps.tickets.bind(ticket, pid),
      settings: deps.settings,
    });
    this.entries.set(id, { publish, streamId, playbackId: decision.stream.playbackId, createdAt: Date.now() });
    void publish.ended.then(() => {
      deps.tickets.revoke(ticket);
      deps.release(holder);
      if (this.entries.get(id)?.publish === publish) this.entries.delete(id);
    });
    try {
      const answer = await publish.start();
      // Answered: an earlier WebRTC publish of the stream makes way (its bridge's RTMP publish
      // would be replaced by this one's anyway), as a new RTMP publisher replaces an old one.
      for (const [otherId, other] of this.entries) {
        if (otherId === id || other.streamId !== streamId) continue;
        this.entries.delete(otherId);
        other.publish.end("replaced by a newer WebRTC publish of the stream");
      }
      log.info({ video: offer.video.fmtp ?? "h264", audio: offer.audio ? "opus" : "none" }, "WebRTC publish answered");
      return { id, answer, streamId };
    } catch (err) {
      publish.end(`could not answer: ${(err as Error).message}`);
      if (err instanceof OfferError) throw new WhipRefusal(400, err.message);
      if (err instanceof PublishEnded) throw new WhipRefusal(409, `the publish ended before it was answered: ${err.message}`);
      log.error({ err }, "could not answer a WHIP offer");
      throw new WhipRefusal(500, "the server could not set up the WebRTC session");
    }
  }

  /** The 201 has been sent: the publish's peer may check the offer's candidates if the publisher's own checks do not connect it first. */
  answered(id: string): void {
    this.entries.get(id)?.publish.answered();
  }

  status(id: string): WhipStatus | undefined {
    const e = this.entries.get(id);
    return e && { id, streamId: e.streamId, playbackId: e.playbackId, createdAt: e.createdAt, packets: e.publish.packets, bytes: e.publish.bytes };
  }

  /** DELETE: ends the publish (its session's reconnect window starts); false if unknown. */
  end(id: string): boolean {
    const e = this.entries.get(id);
    if (!e) return false;
    this.entries.delete(id);
    e.publish.end("the publisher ended it (DELETE)");
    return true;
  }

  get size(): number {
    return this.entries.size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const e of all) e.publish.end("the server is shutting down");
    await Promise.all(all.map((e) => e.publish.ended));
  }
}
