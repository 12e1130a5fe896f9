import type { SessionRecord, Store, Tx } from "../db";
import type { EventSink } from "../events";
import type { Logger } from "../log";

export interface OrphanDeps {
  store: Store;
  events: EventSink;
  log: Logger;
  /** Whether anything of a session's recording was kept (an unanswered object store counts as yes: finalize looks again). */
  recordingKept(sessionId: string): Promise<boolean>;
  /** Hands an ended recorded session's recording to finalize, or marks it failed if nothing was `kept`, in the transaction `tx`. */
  handOffRecording(tx: Tx, streamId: string, sessionId: string, kept: boolean): Promise<void>;
}

/**
 * Ends a session whose process is gone (this node's previous run, or another node that died),
 * exactly once however many nodes try: the conditional end decides, and only its winner
 * writes the rest in the same transaction. First its node is fenced off: if that node still
 * holds the stream under a valid lease (it was only slow), nothing ends; an expired lease of
 * that node is taken from it with a new epoch, so that it writes nothing more should it come
 * back from a pause. The child stream goes idle with the stream.idle its stream.started is
 * owed; the parent goes idle unless another node holds its lease now (a takeover already
 * live); a recorded session is handed to finalize (recording.waiting). Returns whether this
 * call ended it.
 */
export async function endOrphanedSession(
  deps: OrphanDeps,
  s: SessionRecord,
  reason: string,
  o: { at?: number; /** The node that has just taken the stream's lease and ends what was left open before its own session. */ takenBy?: string } = {},
): Promise<boolean> {
  const { store, events } = deps;
  const at = o.at ?? Math.max(s.lastSeen, s.createdAt);
  // Looked for before the transaction: an object store's answer must not hold the stream's row.
  const kept = s.record ? await deps.recordingKept(s.id) : false;
  const ended = await store.transaction(async (tx) => {
    // The parent stream's row first: the one lock order of a session's writes. A session of the
    // node that has just taken the lease is its own stale one (its new session is not open yet).
    if (s.nodeId !== null && s.nodeId !== o.takenBy && (await tx.nodes.fenceOff(s.parentId, s.nodeId)) === "holds") return false;
    const child = await tx.streams.get(s.id);
    if (!(await tx.sessions.end(s.id, at, reason))) return false;
    await tx.streams.setActive([s.id], false);
    await tx.streams.setIdleUnlessHeld(s.parentId);
    if (child?.isActive) await events.raise("stream.idle", s.parentId, { sessionId: s.id }, tx);
    if (s.record) await deps.handOffRecording(tx, s.parentId, s.id, kept);
    return true;
  });
  if (ended) deps.log.warn({ streamId: s.parentId, sessionId: s.id, node: s.nodeId, reason }, "ended a session whose process is gone");
  return ended;
}
