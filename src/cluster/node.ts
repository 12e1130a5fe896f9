import type { NodeRecord, Store } from "../db";
import type { Logger } from "../log";
import { endOrphanedSession, type OrphanDeps, type SessionManager, type StreamNotice } from "../sessions";
import { NoticeListener } from "./notices";

export interface ClusterNodeOptions {
  store: Store;
  log: Logger;
  node: Omit<NodeRecord, "lastSeen">;
  heartbeatMs: number;
  leaseMs: number;
  controlPollMs: number;
  /** Ends sessions of nodes that are gone. */
  orphans: OrphanDeps;
  /** This node's live sessions (an ingest node), told of other nodes' notices. */
  sessions?: SessionManager;
  /** PostgreSQL, for LISTEN: absent on SQLite, where this is the only node. */
  databaseUrl?: string;
}

/**
 * This process as one node of several (docs/architecture.md#nodes-and-roles): a heartbeat in the nodes table that
 * also renews the leases on the streams it runs; the janitor that ends sessions of nodes that
 * are gone (every node runs it, one conditional update picks who ends each, exactly once); and,
 * on an ingest node, what other nodes announce (suspend, delete, terminate, changed settings)
 * through NOTIFY, with a poll that catches what a dropped listener missed.
 */
export class ClusterNode {
  private timers: NodeJS.Timeout[] = [];
  private listener: NoticeListener | undefined;
  private beating: Promise<void> | undefined;
  private sweeping: Promise<void> | undefined;
  private polling: Promise<void> | undefined;
  private lastBeatOk = true;

  constructor(private readonly o: ClusterNodeOptions) {}

  get id(): string {
    return this.o.node.id;
  }

  async start(): Promise<void> {
    const { o } = this;
    await this.beat();
    if (o.sessions && o.databaseUrl) {
      const sessions = o.sessions;
      this.listener = new NoticeListener(o.databaseUrl, o.node.id, (n: StreamNotice) => void sessions.heard(n), o.log);
      await this.listener.start();
    }
    this.every(o.heartbeatMs, () => (this.beating ??= this.beat().finally(() => (this.beating = undefined))));
    this.every(o.heartbeatMs, () => (this.sweeping ??= this.sweep().finally(() => (this.sweeping = undefined))));
    if (o.sessions) this.every(o.controlPollMs, () => (this.polling ??= this.poll().finally(() => (this.polling = undefined))));
    // A first sweep now: sessions a previous run of a dead node left are ended without waiting.
    await this.sweep();
  }

  private every(ms: number, fn: () => unknown): void {
    const t = setInterval(fn, ms);
    t.unref();
    this.timers.push(t);
  }

  /** Says it is alive now (e.g. once its internal URL is known). */
  beatNow(): Promise<void> {
    return this.beat();
  }

  private async beat(): Promise<void> {
    try {
      const held = await this.o.store.nodes.beat(this.o.node, this.o.leaseMs);
      if (!this.lastBeatOk) this.o.log.info("node heartbeat recorded again");
      this.lastBeatOk = true;
      // A lease taken while this node was away (paused, cut from the database): its session stops here first.
      await this.o.sessions?.leasesHeld(held);
    } catch (err) {
      if (this.lastBeatOk) this.o.log.error({ err }, "could not record this node's heartbeat: other nodes take its streams once its leases run out");
      this.lastBeatOk = false;
    }
  }

  /** The janitor: sessions whose node has not been heard from for a lease are ended, once. */
  private async sweep(): Promise<void> {
    const { o } = this;
    try {
      const alive = (await o.store.nodes.alive(o.leaseMs)).map((n) => n.id);
      if (!alive.includes(o.node.id)) alive.push(o.node.id);
      for (const s of await o.store.sessions.listOpenOrphans(alive)) {
        await endOrphanedSession(o.orphans, s, `node ${s.nodeId} stopped answering: its session ended when its lease ran out`);
      }
    } catch (err) {
      o.log.warn({ err }, "janitor: could not look for sessions of lost nodes; will retry");
    }
  }

  /**
   * NOTIFY keeps nothing for a listener that was away, and only wakes the nodes: every poll, the
   * live streams here converge on their stored control state (suspended, deleted, terminated,
   * changed settings, or the lease taken by another node), in one query.
   */
  private poll(): Promise<void> {
    return this.o.sessions!.reconcile();
  }

  /** Stops beating; `leave`: this node's leases end now (a clean stop), so others may take its streams at once. */
  async stop(leave: boolean): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.listener?.close();
    await Promise.all([this.beating, this.sweeping, this.polling]);
    if (leave) await this.o.store.nodes.leave(this.o.node.id).catch((err: unknown) => this.o.log.warn({ err }, "could not record this node leaving"));
  }
}
