import dns from "node:dns/promises";
import net from "node:net";
import type { Writable } from "node:stream";
import type { Store, StreamRecord } from "../db";
import { INGEST_APP } from "../ingest";
import type { Logger } from "../log";
import type { ProcessRegistry } from "../media";
import { RelayPush, type PushAttempt } from "../multistream";
import { refusePublish, type PublishRefusal } from "../shapes";

export interface PublishRelaysOptions {
  store: Store;
  log: Logger;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
  /** Writes the publish on this node, under its alias, into the relay's ffmpeg's stdin as FLV; returns what stops it. */
  readSource(alias: string, into: Writable): () => void;
  disconnectPublisher(publisherId: string, refusal?: PublishRefusal): void;
}

/** How long a holder's RTMP gets to answer (set-up, or a write making no progress). */
const RELAY_TIMEOUT_MS = 3000;

/** `host:port` → host and port (an IPv6 host in brackets); undefined when malformed. */
export function splitAddress(address: string): { host: string; port: number } | undefined {
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(address);
  const port = m ? Number(m[2]) : NaN;
  return m && port > 0 && port < 65536 ? { host: m[1]!, port } : undefined;
}

/**
 * A publish that lands on this ingest node while another node holds the stream (its session
 * is live there, or waits in its reconnect window for this very encoder, which a balancer sent
 * here): this node relays it to the holder, as an edge relays to its origin. The holder sees a
 * reconnect and continues its session (same session, one recording, playlists that go on
 * after a discontinuity, stream.started again), exactly as on one node; nothing about the
 * session moves. ffmpeg copies the publish, written into its stdin by the ingest, as FLV into
 * onair's own RTMP client, which publishes it with the stream's key to the holder's RTMP (the
 * key never in an argv). When the relay ends (the holder went away), the publisher is let go
 * and its reconnect finds the lease free once it runs out.
 */
export class PublishRelays {
  private readonly relays = new Map<string, PushAttempt>();

  constructor(private readonly o: PublishRelaysOptions) {}

  get count(): number {
    return this.relays.size;
  }

  /** Relays `publisherId`'s publish of `stream` to node `holder`; a refusal when it cannot. */
  async start(publisherId: string, stream: StreamRecord, holder: string): Promise<PublishRefusal | undefined> {
    const { o } = this;
    const busy = refusePublish("elsewhere", `stream ${stream.id} is live on another node (${holder}): reconnect in a moment`);
    if (!o.ffmpegPath || !stream.streamKey) return busy;
    const node = await o.store.nodes.get(holder);
    const at = node?.rtmpAddress ? splitAddress(node.rtmpAddress) : undefined;
    if (!at) return busy;
    // A node's own address (internal, not a tenant's input): a name is looked up once here.
    const address = net.isIP(at.host) ? at.host : (await dns.lookup(at.host).catch(() => undefined))?.address;
    if (!address) return busy;
    const host = at.host.includes(":") ? `[${at.host}]` : at.host;
    const url = `rtmp://${host}:${at.port}/${INGEST_APP}/${stream.streamKey}`;
    const log = o.log.child({ streamId: stream.id, publisherId, holder });
    const relay = new RelayPush(
      {
        input: { kind: "source", name: stream.id, feed: (into) => o.readSource(stream.id, into) },
        videoOnly: false,
        ffmpegPath: o.ffmpegPath,
        registry: o.registry,
        processLog: log,
        url,
        onConnected: () => log.info("publish relayed to the node that holds the stream: its session continues there"),
        // Node to node: a holder that does not answer within this is away (paused, cut off), and
        // the publisher is better let go to reconnect, by then to a free lease.
        timeoutMs: RELAY_TIMEOUT_MS,
      },
      { address, port: at.port, app: INGEST_APP, streamName: stream.streamKey, tcUrl: `rtmp://${host}:${at.port}/${INGEST_APP}` },
    );
    this.relays.set(publisherId, relay);
    log.info("the stream is held by another node: relaying this publish there");
    void relay.ended.then((end) => {
      if (this.relays.get(publisherId) !== relay) return;
      this.relays.delete(publisherId);
      if (end.requested) return;
      log.warn({ reason: end.failure?.reason }, "the relay to the stream's node ended: publisher let go (its reconnect is taken here once the lease runs out)");
      o.disconnectPublisher(publisherId, busy);
    });
    return undefined;
  }

  /** The publisher left: its relay stops. Whether it had one. */
  stop(publisherId: string): boolean {
    const relay = this.relays.get(publisherId);
    if (!relay) return false;
    this.relays.delete(publisherId);
    // What ffmpeg still holds goes out, then the holder sees its publisher leave.
    relay.finish(2000);
    return true;
  }

  /** Every relay stops (shutdown). */
  stopAll(): void {
    for (const id of [...this.relays.keys()]) this.stop(id);
  }
}
