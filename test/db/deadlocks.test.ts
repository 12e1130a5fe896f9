import { openStore, type Store } from "../../src/db";
import { createEventSink } from "../../src/events";
import { createLogger } from "../../src/log";
import { endOrphanedSession } from "../../src/sessions/orphans";
import { throwAwayDatabase } from "../helpers/postgres";

// The live runtime's concurrent writes to one stream and its session, on PostgreSQL (where
// writers run concurrently; SQLite's BEGIN IMMEDIATE runs one at a time): segment counters
// several times a second, going live and idle with their events, the session's end, the next
// session's start and an orphan's end. With rows written in one lock order none of them
// deadlocks, and every counter delta lands.

const COUNTERS = ["sourceSegments", "transcodedSegments", "sourceSegmentsDuration", "transcodedSegmentsDuration", "sourceBytes", "transcodedBytes"] as const;
type Counters = Record<(typeof COUNTERS)[number], number>;
const zero = (): Counters => Object.fromEntries(COUNTERS.map((k) => [k, 0])) as Counters;
const pick = (r: Counters): Counters => Object.fromEntries(COUNTERS.map((k) => [k, r[k]])) as Counters;

describe("concurrent live writes on PostgreSQL", () => {
  let store: Store;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const db = await throwAwayDatabase("deadlocks");
    drop = db.drop;
    store = await openStore({ url: db.url });
  });
  afterAll(async () => {
    await store.close();
    await drop();
  });

  it("segment counters, going live or idle, and session end and start never deadlock, and every counter delta lands", async () => {
    const TRIALS = 300;
    const userId = (await store.users.getOrCreate("alice")).id;
    const parent = await store.streams.create({ userId, name: "live", profiles: [], record: false, playbackPolicy: null });
    // A webhook: the events are written (and reference the stream) in the same transactions.
    await store.webhooks.create(userId, { name: "w", url: "http://127.0.0.1:9/", events: [], sharedSecret: null, streamId: null });
    const log = createLogger("silent");
    const events = createEventSink(store, log);
    const orphans = { store, events, log, recordingKept: async () => true, handOffRecording: async () => undefined };
    const goLiveOrIdle = (sessionId: string, active: boolean) =>
      store.transaction(async (tx) => {
        await tx.streams.setActive([parent.id, sessionId], active);
        await events.raise(active ? "stream.started" : "stream.idle", parent.id, { sessionId }, tx);
      });
    const parentTotal = zero();
    const failures: unknown[] = [];
    let lostUpdates = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const session = await store.sessions.start(parent);
      const ids = [parent.id, session.id];
      const sessionTotal = zero();
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < 8; i++) {
        const delta = zero();
        for (const k of COUNTERS) delta[k] = 1 + ((trial * 7 + i * 13 + k.length) % 50);
        for (const k of COUNTERS) (sessionTotal[k] += delta[k]), (parentTotal[k] += delta[k]);
        writes.push(store.sessions.addProgress(session.id, delta));
        // The runtime's other writes, on the same rows, at the same time.
        if (i === 1) writes.push(goLiveOrIdle(session.id, true));
        if (i === 3) writes.push(goLiveOrIdle(session.id, false));
        if (i === 5)
          writes.push(
            store.transaction(async (tx) => {
              await tx.sessions.end(session.id, Date.now(), "publisher left");
              await tx.streams.setActive(ids, false);
              await events.raise("stream.idle", parent.id, { sessionId: session.id }, tx);
            }),
          );
        if (i === 6) writes.push(store.sessions.start(parent, Date.now(), "gone").then((next) => endOrphanedSession(orphans, next, "node gone")));
      }
      for (const r of await Promise.allSettled(writes)) if (r.status === "rejected") failures.push(r.reason);
      const counted = [pick((await store.sessions.get(session.id))!), pick((await store.streams.get(session.id))!)];
      if (counted.some((c) => JSON.stringify(c) !== JSON.stringify(sessionTotal))) lostUpdates++;
    }
    const deadlocks = failures.filter((e) => (e as { code?: string }).code === "40P01").length;
    if (failures.length) console.log(`${failures.length} writes failed (${deadlocks} deadlocks); ${lostUpdates} of ${TRIALS} sessions lost counters`);
    expect(failures).toEqual([]);
    expect(lostUpdates).toBe(0);
    // Not a retry's doing: the lock order leaves nothing to deadlock.
    expect(store.db.transactionRetries).toBe(0);
    // The events were written in those transactions too.
    expect((await store.db.get<{ n: number }>("SELECT count(*) AS n FROM events"))!.n).toBeGreaterThanOrEqual(3 * TRIALS);
    expect(pick((await store.streams.get(parent.id))!)).toEqual(parentTotal);
  });
});
