import { randomBytes } from "node:crypto";
import type { IngestProtocol } from "../shapes";

/** What a bridge ticket stands for: the stream key it publishes to, and how its publisher came in. */
export interface BridgedPublish {
  streamKey: string;
  protocol: IngestProtocol;
}

/**
 * WebRTC and SRT publishers reach the sessions the way RTMP publishers do: a local ffmpeg
 * (their bridge) republishes them to the RTMP server, so admission, sessions, recordings and
 * multistream stay one code path. A bridge publishes under a ticket, a one-use random name
 * standing for the stream key: the key, a secret, appears in no command line (`ps` shows every
 * argv to every local user), and the ingest learns which protocol the publish came by.
 */
export class BridgeTickets {
  private readonly open = new Map<string, BridgedPublish>();

  issue(publish: BridgedPublish): string {
    const ticket = `bridge-${randomBytes(18).toString("base64url")}`;
    this.open.set(ticket, publish);
    return ticket;
  }

  /** The publish a ticket stands for, once: a ticket admits one publish. */
  redeem(ticket: string): BridgedPublish | undefined {
    const publish = this.open.get(ticket);
    this.open.delete(ticket);
    return publish;
  }

  /** The bridge ended before it published (or its ticket is no longer wanted). */
  revoke(ticket: string): void {
    this.open.delete(ticket);
  }

  get size(): number {
    return this.open.size;
  }
}
