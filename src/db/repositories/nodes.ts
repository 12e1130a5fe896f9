import { lockKey, type Dialect, type Sql } from "../sql";

/** A running onair process, as it last said it was alive. */
export interface NodeRecord {
  id: string;
  roles: string[];
  /** Where other nodes reach its HTTP (live HLS is proxied to the node that packages it). */
  internalUrl: string | null;
  /** Where other nodes reach its RTMP ingest (host:port): publishes of its streams that land elsewhere are relayed there. */
  rtmpAddress: string | null;
  startedAt: number;
  lastSeen: number;
}

interface Row {
  id: string;
  roles: string;
  internal_url: string | null;
  rtmp_address: string | null;
  started_at: number;
  last_seen: number;
}

const toNode = (r: Row): NodeRecord => ({ id: r.id, roles: r.roles.split(",").filter(Boolean), internalUrl: r.internal_url, rtmpAddress: r.rtmp_address ?? null, startedAt: r.started_at, lastSeen: r.last_seen });

/** A node's hold on a stream: `epoch` is the stream's count of takes when this node took it. */
export interface Lease {
  streamId: string;
  nodeId: string;
  epoch: number;
}

/** A write about a live session by a node whose lease was taken: nothing was written. */
export class LeaseLost extends Error {
  constructor(readonly lease: Lease) {
    super(`node ${lease.nodeId} no longer holds stream ${lease.streamId} (epoch ${lease.epoch})`);
  }
}

/**
 * The database's clock in epoch ms: every node compares leases against one clock, so a node
 * whose own clock is off by more than a lease neither looks dead nor outlives its lease.
 */
export const DB_NOW: Record<Dialect, string> = {
  sqlite: "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
  postgres: "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
};

/** A stream's stored control state and lease, as a live session's node checks it. */
export interface ControlState {
  streamId: string;
  deleted: boolean;
  suspended: boolean;
  /** Counts every stored change live sessions must act on. */
  controlSeq: number;
  /** control_seq as the last terminate left it: sessions opened before it end. */
  terminateSeq: number;
  liveNode: string | null;
  epoch: number;
}

/** What taking a stream's lease found. */
export type Claim =
  | { taken: true; lease: Lease; suspended: boolean; deleted: boolean }
  | { taken: false; holder: string }
  | { taken: false; liveStreams: number };

/**
 * Nodes and who runs which stream. No leader: a node says it is alive every heartbeat, and
 * holds a lease on each stream it runs a session of (streams.live_node/live_until), renewed by
 * the same heartbeat. A stream whose lease ran out may be taken by any node; one conditional
 * UPDATE decides, so two nodes never both win, and every take counts the stream's epoch up
 * (live_epoch): the fencing token each write about the session is checked against. Times are
 * the database's (DB_NOW), never a node's.
 */
export class NodesRepository {
  constructor(private readonly q: Sql) {}

  private get now(): string {
    return DB_NOW[this.q.dialect];
  }

  /**
   * The heartbeat: the node is alive now, and its streams' leases last `leaseMs` more. Returns
   * the leases it still holds: one missing from its sessions' was taken (it was away too long).
   */
  async beat(node: Omit<NodeRecord, "lastSeen">, leaseMs: number): Promise<Lease[]> {
    return this.q.transaction(async (q) => {
      await q.run(
        `INSERT INTO nodes (id, roles, internal_url, rtmp_address, started_at, last_seen) VALUES (?, ?, ?, ?, ?, ${this.now})
         ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen, internal_url = excluded.internal_url, rtmp_address = excluded.rtmp_address, roles = excluded.roles`,
        [node.id, node.roles.join(","), node.internalUrl, node.rtmpAddress, node.startedAt],
      );
      await q.run(`UPDATE streams SET live_until = ${this.now} + ? WHERE live_node = ?`, [leaseMs, node.id]);
      const rows = await q.all<{ id: string; live_epoch: number }>("SELECT id, live_epoch FROM streams WHERE live_node = ?", [node.id]);
      return rows.map((r) => ({ streamId: r.id, nodeId: node.id, epoch: Number(r.live_epoch) }));
    });
  }

  async get(id: string): Promise<NodeRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM nodes WHERE id = ?", [id]);
    return row && toNode(row);
  }

  /** Nodes heard from within the last `withinMs`, by the database's clock. */
  async alive(withinMs: number): Promise<NodeRecord[]> {
    return (await this.q.all<Row>(`SELECT * FROM nodes WHERE last_seen >= ${this.now} - ? ORDER BY id`, [withinMs])).map(toNode);
  }

  /** Alone on the database (SQLite, at start): every lease was the previous run's, and ends now. */
  async releaseAll(): Promise<void> {
    await this.q.run("UPDATE streams SET live_node = NULL, live_until = NULL WHERE live_node IS NOT NULL");
  }

  /** A stopping node: its leases end now, so another node may take its streams at once. */
  async leave(id: string): Promise<void> {
    await this.q.transaction(async (q) => {
      await q.run("UPDATE streams SET live_node = NULL, live_until = NULL WHERE live_node = ?", [id]);
      await q.run("DELETE FROM nodes WHERE id = ?", [id]);
    });
  }

  /**
   * Takes the stream's lease for `nodeId` for `leaseMs`, if it is free, expired, or this node's
   * already, with a new epoch. `cap`: MAX_LIVE_STREAMS_PER_USER across every node: the user's
   * other streams under a valid lease anywhere are counted (one user's takes queue on a lock, so
   * two nodes cannot both pass at the limit). Returns the lease and whether the stream was
   * suspended or deleted as the take saw it, or who holds it, or how many live streams the user has.
   */
  async claimStream(streamId: string, nodeId: string, leaseMs: number, cap?: { userId: string; max: number }): Promise<Claim> {
    return this.q.transaction(async (q) => {
      if (cap) {
        await lockKey(q, `live streams of ${cap.userId}`);
        const row = await q.get<{ n: number | string }>(
          `SELECT COUNT(*) AS n FROM streams WHERE user_id = ? AND parent_id IS NULL AND id != ? AND live_node IS NOT NULL AND live_until >= ${this.now}`,
          [cap.userId, streamId],
        );
        const n = Number(row?.n ?? 0);
        if (n >= cap.max) return { taken: false as const, liveStreams: n };
      }
      const row = await q.get<{ live_epoch: number; suspended: number; deleted_at: number | null }>(
        `UPDATE streams SET live_node = ?, live_until = ${this.now} + ?, live_epoch = live_epoch + 1
         WHERE id = ? AND (live_node IS NULL OR live_node = ? OR live_until IS NULL OR live_until < ${this.now})
         RETURNING live_epoch, suspended, deleted_at`,
        [nodeId, leaseMs, streamId, nodeId],
      );
      if (row) {
        const lease = { streamId, nodeId, epoch: Number(row.live_epoch) };
        return { taken: true as const, lease, suspended: Number(row.suspended) === 1, deleted: row.deleted_at !== null };
      }
      const held = await q.get<{ live_node: string | null }>("SELECT live_node FROM streams WHERE id = ?", [streamId]);
      return { taken: false as const, holder: held?.live_node ?? "unknown" };
    });
  }

  /** Gives the stream's lease back (its session ended here); a lease taken since is not touched. */
  async releaseStream(lease: Lease): Promise<void> {
    await this.q.run("UPDATE streams SET live_node = NULL, live_until = NULL WHERE id = ? AND live_node = ? AND live_epoch = ?", [
      lease.streamId,
      lease.nodeId,
      lease.epoch,
    ]);
  }

  /**
   * Inside a transaction: whether `lease` is still the stream's, holding the stream's row until
   * the transaction ends (PostgreSQL), so that no take can come between this check and the
   * writes it guards. The parent stream's row is also the first a session's writes lock.
   */
  async confirm(lease: Lease): Promise<boolean> {
    const lock = this.q.dialect === "postgres" ? " FOR NO KEY UPDATE" : "";
    const row = await this.q.get(`SELECT 1 AS held FROM streams WHERE id = ? AND live_node = ? AND live_epoch = ?${lock}`, [lease.streamId, lease.nodeId, lease.epoch]);
    return row !== undefined;
  }

  /**
   * Inside a transaction, before ending a session of `nodeId` that looks lost: whether that node
   * still holds the stream under a valid lease (then the session is not lost). An expired lease
   * of that node is taken from it here, with a new epoch, so that a node coming back from a pause
   * cannot write about the session any more.
   */
  async fenceOff(streamId: string, nodeId: string): Promise<"holds" | "fenced"> {
    const lock = this.q.dialect === "postgres" ? " FOR NO KEY UPDATE" : "";
    const row = await this.q.get<{ live_node: string | null; valid: number | boolean }>(
      `SELECT live_node, CASE WHEN live_until >= ${this.now} THEN 1 ELSE 0 END AS valid FROM streams WHERE id = ?${lock}`,
      [streamId],
    );
    if (row?.live_node !== nodeId) return "fenced";
    if (Number(row.valid) === 1) return "holds";
    await this.q.run("UPDATE streams SET live_node = NULL, live_until = NULL, live_epoch = live_epoch + 1 WHERE id = ?", [streamId]);
    return "fenced";
  }

  /**
   * A change live sessions must act on, stored with the change (in its transaction): control_seq
   * counts up, and a terminate stores the count it made, so a node that missed the notice
   * still ends a session opened before it, and never one opened after.
   */
  async recordControl(streamId: string, terminate: boolean): Promise<void> {
    await this.q.run(`UPDATE streams SET control_seq = control_seq + 1${terminate ? ", terminate_seq = control_seq + 1" : ""} WHERE id = ?`, [streamId]);
  }

  /** The control state of the streams `ids` (deleted ones included). */
  async controlStates(ids: string[]): Promise<ControlState[]> {
    if (ids.length === 0) return [];
    const rows = await this.q.all<{ id: string; deleted_at: number | null; suspended: number; control_seq: number; terminate_seq: number; live_node: string | null; live_epoch: number }>(
      `SELECT id, deleted_at, suspended, control_seq, terminate_seq, live_node, live_epoch FROM streams WHERE id IN (${ids.map(() => "?").join(", ")})`,
      ids,
    );
    return rows.map((r) => ({
      streamId: r.id,
      deleted: r.deleted_at !== null,
      suspended: Number(r.suspended) === 1,
      controlSeq: Number(r.control_seq),
      terminateSeq: Number(r.terminate_seq),
      liveNode: r.live_node,
      epoch: Number(r.live_epoch),
    }));
  }

  /** Whether `lease` is still the stream's (outside a transaction: a second look before acting on a heartbeat's answer). */
  async holds(lease: Lease): Promise<boolean> {
    return (await this.q.get("SELECT 1 AS held FROM streams WHERE id = ? AND live_node = ? AND live_epoch = ?", [lease.streamId, lease.nodeId, lease.epoch])) !== undefined;
  }

  /** The node whose lease on the stream is valid now, if any. */
  async holder(streamId: string): Promise<string | undefined> {
    const row = await this.q.get<{ live_node: string | null }>(`SELECT live_node FROM streams WHERE id = ? AND live_until >= ${this.now}`, [streamId]);
    return row?.live_node ?? undefined;
  }
}
