import type { Sql } from "../sql";

/** A running onair process, as it last said it was alive. */
export interface NodeRecord {
  id: string;
  roles: string[];
  /** Where other nodes reach its HTTP (live HLS is proxied to the node that packages it). */
  internalUrl: string | null;
  startedAt: number;
  lastSeen: number;
}

interface Row {
  id: string;
  roles: string;
  internal_url: string | null;
  started_at: number;
  last_seen: number;
}

const toNode = (r: Row): NodeRecord => ({ id: r.id, roles: r.roles.split(",").filter(Boolean), internalUrl: r.internal_url, startedAt: r.started_at, lastSeen: r.last_seen });

/**
 * Nodes and who runs which stream. No leader: a node says it is alive every heartbeat, and
 * holds a lease on each stream it runs a session of (streams.live_node/live_until), renewed by
 * the same heartbeat. A stream whose lease ran out may be taken by any node; one conditional
 * UPDATE decides, so two nodes never both win.
 */
export class NodesRepository {
  constructor(private readonly q: Sql) {}

  /** The heartbeat: the node is alive now, and its streams' leases last until `leaseUntil`. */
  async beat(node: Omit<NodeRecord, "lastSeen">, now: number, leaseUntil: number): Promise<void> {
    await this.q.transaction(async (q) => {
      await q.run(
        `INSERT INTO nodes (id, roles, internal_url, started_at, last_seen) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen, internal_url = excluded.internal_url, roles = excluded.roles`,
        [node.id, node.roles.join(","), node.internalUrl, node.startedAt, now],
      );
      await q.run("UPDATE streams SET live_until = ? WHERE live_node = ?", [leaseUntil, node.id]);
    });
  }

  async get(id: string): Promise<NodeRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM nodes WHERE id = ?", [id]);
    return row && toNode(row);
  }

  /** Nodes seen since `since`. */
  async alive(since: number): Promise<NodeRecord[]> {
    return (await this.q.all<Row>("SELECT * FROM nodes WHERE last_seen >= ? ORDER BY id", [since])).map(toNode);
  }

  /** A stopping node: its leases end now, so another node may take its streams at once. */
  async leave(id: string): Promise<void> {
    await this.q.transaction(async (q) => {
      await q.run("UPDATE streams SET live_node = NULL, live_until = NULL WHERE live_node = ?", [id]);
      await q.run("DELETE FROM nodes WHERE id = ?", [id]);
    });
  }

  /** Forgets nodes not seen since `before` (their rows only say they once ran). */
  async forgetBefore(before: number): Promise<number> {
    return this.q.run("DELETE FROM nodes WHERE last_seen < ?", [before]);
  }

  /**
   * Takes the stream's lease for `nodeId` until `until`, if it is free, expired, or this node's
   * already. Returns the holder when another node's lease is still valid.
   */
  async claimStream(streamId: string, nodeId: string, now: number, until: number): Promise<{ taken: true } | { taken: false; holder: string }> {
    const changed = await this.q.run(
      "UPDATE streams SET live_node = ?, live_until = ? WHERE id = ? AND (live_node IS NULL OR live_node = ? OR live_until IS NULL OR live_until < ?)",
      [nodeId, until, streamId, nodeId, now],
    );
    if (changed === 1) return { taken: true };
    const row = await this.q.get<{ live_node: string | null }>("SELECT live_node FROM streams WHERE id = ?", [streamId]);
    return { taken: false, holder: row?.live_node ?? "unknown" };
  }

  /** Gives the stream's lease back (its session ended here). */
  async releaseStream(streamId: string, nodeId: string): Promise<void> {
    await this.q.run("UPDATE streams SET live_node = NULL, live_until = NULL WHERE id = ? AND live_node = ?", [streamId, nodeId]);
  }

  /** The node whose lease on the stream is valid now, if any. */
  async holder(streamId: string, now: number): Promise<string | undefined> {
    const row = await this.q.get<{ live_node: string | null }>("SELECT live_node FROM streams WHERE id = ? AND live_until >= ?", [streamId, now]);
    return row?.live_node ?? undefined;
  }
}
