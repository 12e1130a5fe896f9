import type { Store } from "../db";
import type { Logger } from "../log";
import type { ViewerCounter } from "./viewers";

// Several nodes: each counts the viewers of the streams it packages, and writes its counts to
// the viewer_counts table every interval; GET /data/views/now sums the rows still fresh. A node
// that dies stops refreshing its rows, which then drop out of the sum (and are deleted later).

export interface ViewerCountFlushOptions {
  counter: ViewerCounter;
  store: Store;
  log: Logger;
  nodeId: string;
  /** How often this node writes its counts, ms (the node heartbeat). */
  intervalMs: number;
  /** Only these playback ids are written (those live on this node): made-up ids never reach the database. */
  keep?: (playbackId: string) => boolean;
}

/** Rows no node has refreshed for this many intervals are deleted (a node that died). */
const STALE_INTERVALS = 12;

/** How fresh a node's row must be to count: three intervals, so one late write loses nothing. */
export const freshViewerRowsMs = (intervalMs: number) => 3 * intervalMs;

export interface ViewerCountFlush {
  /** Writes this node's counts now (tests; the interval does it otherwise). */
  flushNow(): Promise<void>;
  /** Stops writing and removes this node's rows: its viewers are no longer counted. */
  stop(): Promise<void>;
}

export function startViewerCountFlush(o: ViewerCountFlushOptions): ViewerCountFlush {
  let running: Promise<void> | undefined;
  let wroteSome = true; // the first write clears rows a previous run of this node id left
  let ticks = 0;
  let failing = false;

  const flush = async () => {
    const now = Date.now();
    const counts = new Map([...o.counter.countsByProtocol(now)].filter(([playbackId]) => o.keep?.(playbackId) ?? true));
    try {
      // Nothing counted now nor at the last write: nothing to say.
      if (counts.size > 0 || wroteSome) await o.store.viewerCounts.replaceForNode(o.nodeId, counts, now);
      wroteSome = counts.size > 0;
      if (++ticks % STALE_INTERVALS === 0) await o.store.viewerCounts.deleteStale(now - STALE_INTERVALS * o.intervalMs);
      if (failing) o.log.info("viewer counts recorded again");
      failing = false;
    } catch (err) {
      if (!failing) o.log.warn({ err }, "could not record this node's viewer counts; will retry");
      failing = true;
    }
  };
  const flushNow = () => (running ??= flush().finally(() => (running = undefined)));

  const timer = setInterval(() => void flushNow(), o.intervalMs);
  timer.unref();
  return {
    flushNow,
    stop: async () => {
      clearInterval(timer);
      await running;
      await o.store.viewerCounts.clearNode(o.nodeId).catch((err: unknown) => o.log.warn({ err }, "could not clear this node's viewer counts"));
    },
  };
}
