import type { Sql } from "../db";

// Enqueueing wakes the workers of this process at once instead of at their next poll: the
// "within 100 ms of being raised" promise. Keyed by connection so that any code holding the
// store (the event sink, the resend route) rings the same bell the workers listen to. Other
// processes writing to the same database are caught by the workers' idle poll instead.

const listeners = new WeakMap<Sql, Set<() => void>>();

export function onRing(handle: Sql, listener: () => void): () => void {
  const db = handle.root;
  let set = listeners.get(db);
  if (!set) listeners.set(db, (set = new Set()));
  set.add(listener);
  return () => set.delete(listener);
}

/** Listeners must be cheap and must not touch the database synchronously: the ringer may still be
 * inside its transaction. */
export function ring(db: Sql): void {
  const set = listeners.get(db);
  if (set) for (const listener of set) listener();
}

/**
 * `run`, once, on the next turn of the event loop however often this is called before then:
 * after the ringer's transaction has committed, and one pass for a burst of rings.
 */
export function nextTurnOnce(run: () => void): () => void {
  let scheduled = false;
  return () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      run();
    });
  };
}
