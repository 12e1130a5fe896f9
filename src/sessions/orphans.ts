import type { SessionRecord, Store, Tx } from "../db";
import type { EventSink } from "../events";
import type { Logger } from "../log";

export interface OrphanDeps {
  store: Store;
  events: EventSink;
  log: Logger;
  /** Hands an ended recorded session's recording to finalize (or marks it failed if nothing was kept), in the transaction `tx`. */
  handOffRecording(tx: Tx, streamId: string, sessionId: string): Promise<void>;
}

/**
 * Ends a session whose process is gone (this node's previous run, or another node that died),
 * exactly once however many nodes try: the conditional end decides, and only its winner
 * writes the rest in the same transaction. The child stream goes idle with the stream.idle its
 * stream.started is owed; the parent goes idle unless another node holds its lease now (a
 * takeover already live); a recorded session is handed to finalize (recording.waiting).
 * Returns whether this call ended it.
 */
export async function endOrphanedSession(deps: OrphanDeps, s: SessionRecord, reason: string, at = Math.max(s.lastSeen, s.createdAt)): Promise<boolean> {
  const { store, events } = deps;
  const ended = await store.transaction(async (tx) => {
    const child = await tx.streams.get(s.id);
    if (!(await tx.sessions.end(s.id, at, reason))) return false;
    await tx.streams.setActive([s.id], false);
    await tx.db.run("UPDATE streams SET is_active = 0 WHERE id = ? AND (live_node IS NULL OR live_node = ? OR live_until < ?)", [s.parentId, s.nodeId ?? "", Date.now()]);
    if (child?.isActive) await events.raise("stream.idle", s.parentId, { sessionId: s.id }, tx);
    if (s.record) await deps.handOffRecording(tx, s.parentId, s.id);
    return true;
  });
  if (ended) deps.log.warn({ streamId: s.parentId, sessionId: s.id, node: s.nodeId, reason }, "ended a session whose process is gone");
  return ended;
}
