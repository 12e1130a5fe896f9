import { lockKey, type StreamRecord } from "../../db";
import type { ApiDeps } from "../deps";

// SRT ports on first use (docs/architecture.md#srt-ingest): a stream gets its port, passphrase
// and armed listener when its owner asks for its srtUrl (the create response, GET /stream/{id}),
// never when it is pulled, and a user holds at most SRT_PORTS_PER_USER of them. A listener no
// caller used and no read asked for in SRT_LISTENER_IDLE_SECONDS is stopped; the next read arms
// it again. Listing streams shows the ports they have and assigns none.

/** Why a stream shows no srtUrl, for the log (the stream object has no place for it). */
const REFUSALS = {
  share: "its owner holds SRT_PORTS_PER_USER SRT ports already (delete a stream that has one, or set a pull on it)",
  range: "every port of SRT_PORTS is taken",
} as const;

/**
 * A read is noted at most once in this fraction of the idle time: the listener stays armed,
 * without a write and an ingest notice for every GET.
 */
const TOUCH_FRACTION = 8;

/**
 * The stream as its owner sees it when asking for its srtUrl: given a port if it has none and
 * may have one, its listener's idle time restarted. Child streams, pulled streams and servers
 * without SRT_PORTS are returned as they are. Why a stream gets no port is logged at warn when
 * it is created, at debug on reads (a client polling its stream would fill the log).
 */
export async function withSrtPort(deps: ApiDeps, s: StreamRecord, o: { created?: boolean; now?: number } = {}): Promise<StreamRecord> {
  const { srt, store } = deps;
  const now = o.now ?? Date.now();
  if (!srt || s.parentId !== null || s.pull !== null || !s.streamKey) return s;
  if (s.srtPort !== null && now - (s.srtUsedAt ?? 0) < srt.idleMs / TOUCH_FRACTION) return s;
  const refused = (reason: keyof typeof REFUSALS) => {
    const fields = { streamId: s.id, userId: s.userId, reason };
    if (o.created) deps.log.warn(fields, `the stream has no srtUrl: ${REFUSALS[reason]}`);
    else deps.log.debug(fields, `the stream has no srtUrl: ${REFUSALS[reason]}`);
    return s;
  };
  // A user past the share is told so without taking the ports' lock.
  if (s.srtPort === null && (await store.streams.srtPortsHeld(s.userId)) >= srt.perUser) return refused("share");
  const result = await store.transaction(async (tx) => {
    await lockKey(tx.db, "srt-ports");
    const assigned = await tx.streams.assignSrtPort(s.id, srt.ports, srt.perUser, now);
    // Ingest nodes learn the port, or that the listener is wanted again.
    if ("port" in assigned) await deps.live.announce(tx.db, { streamId: s.id, change: "changed" });
    return assigned;
  });
  if ("refused" in result) return result.refused === "share" || result.refused === "range" ? refused(result.refused) : s;
  return (await store.streams.get(s.id)) ?? s;
}
