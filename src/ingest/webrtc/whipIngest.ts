import { randomBytes } from "node:crypto";
import type { Logger } from "../../log";
import type { ProcessRegistry } from "../../media";
import type { BridgeTickets } from "../bridges";
import { OfferError, restrictOffer } from "./sdp";
import { WhipPublish, type WhipPeerSettings } from "./whipPublish";

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
  /** The admission every protocol shares (SessionManager.checkPublish). */
  check(streamKey: string): Promise<{ stream: { id: string } } | { status: number; reason: string }>;
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
  createdAt: number;
}

/** What a WHIP resource shows of itself (GET, for the broadcast page). */
export interface WhipStatus {
  id: string;
  streamId: string;
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

  constructor(private readonly deps: WhipIngestDeps) {}

  /** Admits and answers an offer: the resource id and the answer SDP, or a WhipRefusal. */
  async publish(streamKey: string, offerText: string): Promise<{ id: string; answer: string; streamId: string }> {
    const { deps } = this;
    if (this.closed) throw new WhipRefusal(503, "the server is shutting down: publish again in a moment");
    const offer = (() => {
      try {
        return restrictOffer(offerText);
      } catch (err) {
        if (err instanceof OfferError) throw new WhipRefusal(400, err.message);
        throw err;
      }
    })();
    const decision = await deps.check(streamKey);
    if ("reason" in decision) throw new WhipRefusal(decision.status, decision.reason);
    if (!deps.ffmpegPath) throw new WhipRefusal(503, "ffmpeg is not available on this server");
    const streamId = decision.stream.id;

    const id = randomBytes(18).toString("base64url");
    const ticket = deps.tickets.issue({ streamKey, protocol: "webrtc" });
    const log = deps.log.child({ streamId, whipId: id });
    const publish = new WhipPublish(id, offer, {
      log,
      registry: deps.registry,
      ffmpegPath: deps.ffmpegPath,
      workDir: deps.workDir,
      outputUrl: deps.rtmpUrl(ticket),
      settings: deps.settings,
    });
    for (const [otherId, other] of this.entries) {
      if (other.streamId === streamId) other.publish.end("replaced by a newer WebRTC publish of the stream");
      if (other.streamId === streamId) this.entries.delete(otherId);
    }
    this.entries.set(id, { publish, streamId, createdAt: Date.now() });
    void publish.ended.then(() => {
      deps.tickets.revoke(ticket);
      if (this.entries.get(id)?.publish === publish) this.entries.delete(id);
    });
    try {
      const answer = await publish.start();
      log.info({ video: offer.video.fmtp ?? "h264", audio: offer.audio ? "opus" : "none" }, "WebRTC publish answered");
      return { id, answer, streamId };
    } catch (err) {
      publish.end(`could not answer: ${(err as Error).message}`);
      if (err instanceof OfferError) throw new WhipRefusal(400, err.message);
      log.error({ err }, "could not answer a WHIP offer");
      throw new WhipRefusal(500, "the server could not set up the WebRTC session");
    }
  }

  status(id: string): WhipStatus | undefined {
    const e = this.entries.get(id);
    return e && { id, streamId: e.streamId, createdAt: e.createdAt, packets: e.publish.packets, bytes: e.publish.bytes };
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
