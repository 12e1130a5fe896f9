import { LeaseLost, type Lease, type Store, type Tx } from "../db";
import type { EventSink } from "../events";
import type { Logger } from "../log";
import type { SegmentCounters } from "../shapes";
import type { Clock } from "./clock";

// What a live session writes about itself (live, idle, segment counters, its end), each in a
// transaction fenced by the stream's lease, and none of it able to take the process down.

/** How often a session end that could not be written (disk full) is tried again. */
const END_RETRY_MS = 2000;

export interface SessionWritesDeps {
  store: Store;
  events: EventSink;
  log: Logger;
  clock: Clock;
  /** This node's hold on the stream: every write is conditional on it. */
  lease: Lease;
  streamId: string;
  sessionId: string;
  /** Checks (and reports) why media cannot be written; called when a write failed. */
  storageProblem: () => unknown;
  /** Another session of the stream is live now (a retried end must leave its isActive alone). */
  streamTakenOver: (streamId: string) => boolean;
  /** Another node took the lease: nothing more is written. */
  leaseLost: () => boolean;
  /** A write found the lease taken: the session stops without writing. */
  abandon: (why: string) => void;
}

/** Which rows' isActive a session's end clears: only its own child stream's once a successor is live. */
export function activeRowsAtEnd(streamId: string, sessionId: string, takenOver: boolean): string[] {
  return takenOver ? [sessionId] : [streamId, sessionId];
}

export class SessionWrites {
  constructor(private readonly d: SessionWritesDeps) {}

  /**
   * A state write from a media callback: if the disk is full it throws, and that must not
   * take the process (and every other session) down. Logged; storage is checked at once.
   */
  async write(what: string, write: () => Promise<unknown>): Promise<boolean> {
    try {
      await write();
      return true;
    } catch (err) {
      if (err instanceof LeaseLost) {
        this.d.abandon(`${what} found the lease taken`);
        return false;
      }
      this.d.log.error({ err, what }, "could not record live session state");
      this.d.storageProblem();
      return false;
    }
  }

  /**
   * A write about the session, in one transaction that first checks (and holds, on PostgreSQL)
   * this node's lease: the parent stream's row is the first it locks. Throws LeaseLost, having
   * written nothing, when another node took it.
   */
  fenced<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    const { lease } = this.d;
    return this.d.store.transaction(async (tx) => {
      if (!(await tx.nodes.confirm(lease))) throw new LeaseLost(lease);
      return work(tx);
    });
  }

  /**
   * isActive and its event (stream.started or stream.idle) together or not at all. False when
   * it could not be written (logged): the caller ends the session instead.
   */
  activity(active: boolean, what: string): Promise<boolean> {
    const { streamId, sessionId, events } = this.d;
    return this.write(what, () =>
      this.fenced(async (tx) => {
        await tx.streams.setActive([streamId, sessionId], active);
        await events.raise(active ? "stream.started" : "stream.idle", streamId, { sessionId }, tx);
      }),
    );
  }

  /** A segment's counters added to the session's row; a failure is logged only. */
  progress(delta: SegmentCounters): void {
    void this.write("segment counters", () => this.fenced((tx) => tx.sessions.addProgress(this.d.sessionId, delta)));
  }

  /**
   * The session's end, written until it is: closed, not active, and the stream.idle its
   * stream.started is owed, in one transaction. A full disk delays it (retried every 2 s
   * while the server runs, the lease kept meanwhile); a restart's recovery closes what is
   * still open then. Not written at all once another node took the lease (that node ends it).
   * `written`: called once it is in the database, or nothing is left to write.
   */
  async end(described: string, owesIdle: boolean, written: () => void, at = this.d.clock.now(), attempt = 1): Promise<void> {
    const { store, events, streamId, sessionId } = this.d;
    if (this.d.leaseLost()) return written();
    const recorded = await this.write("session end", () =>
      this.fenced(async (tx) => {
        await tx.sessions.end(sessionId, at, described);
        // Written late, while a successor is live: only this session's own child stream.
        const takenOver = attempt > 1 && this.d.streamTakenOver(streamId) === true;
        await tx.streams.setActive(activeRowsAtEnd(streamId, sessionId, takenOver), false);
        // stream.idle pairs with stream.started: exactly one for each.
        if (owesIdle) await events.raise("stream.idle", streamId, { sessionId }, tx);
      }),
    );
    if (!recorded && store.db.isOpen && !this.d.leaseLost()) {
      return void this.d.clock.setTimeout(() => void this.end(described, owesIdle, written, at, attempt + 1), END_RETRY_MS).unref();
    }
    if (recorded && attempt > 1) this.d.log.info({ attempt }, "session end recorded after storage came back");
    written();
  }
}
