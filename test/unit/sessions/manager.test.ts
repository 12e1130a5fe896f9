import type { StreamRecord } from "../../../src/db";
import type { Fmp4Piece } from "../../../src/hls";
import { SessionManager, StreamKeyIndex, type SessionManagerDeps, type StreamRuntime } from "../../../src/sessions";
import { MAX_PIPELINE_RESTARTS, restartDelayMs } from "../../../src/sessions/streamRuntime";
import { liveWorld, settle, sourceMedia, until, type LiveWorld } from "../../helpers/liveSessions";

// The session manager in process: publishes come in as the ingest hands them over, each
// stream's runtime runs on fake pipelines and a fake clock, on the project's store.

let media: Fmp4Piece[][];
beforeAll(async () => {
  media = await sourceMedia();
});

let w: LiveWorld;
let userId: string;
let handedOff: string[];
beforeEach(async () => {
  w = await liveWorld();
  userId = (await w.store.users.getOrCreate("alice")).id;
  handedOff = [];
});
afterEach(async () => {
  await w.close();
});

async function manager(over: Partial<SessionManagerDeps> = {}): Promise<SessionManager> {
  const { streamTakenOver: _taken, ...runtimeDeps } = w.deps;
  const keys = new StreamKeyIndex(w.store, w.deps.log);
  await keys.reload();
  return new SessionManager({
    ...runtimeDeps,
    keys,
    leaseMs: 10_000,
    orphans: { store: w.store, events: w.events, log: w.deps.log, recordingKept: async () => true, handOffRecording: async (_tx, _streamId, sessionId) => void handedOff.push(sessionId) },
    ...over,
  });
}

const newStream = (name: string) => w.store.streams.create({ userId, name, profiles: [], record: false, playbackPolicy: null });

/** A publisher of the stream's key, admitted and started as the ingest does. */
async function publish(m: SessionManager, stream: StreamRecord, publisherId: string): Promise<string | undefined> {
  const admitted = m.admit(stream.streamKey!, publisherId);
  if ("refusal" in admitted) return admitted.refusal.reason;
  return (await m.onPublishStart(publisherId, stream.streamKey!))?.reason;
}

async function goLive(m: SessionManager, stream: StreamRecord): Promise<StreamRuntime> {
  const rt = m.liveSession(stream.id)!;
  w.pipelines.latest(stream.id).media(media);
  await until(`${stream.name} is live`, () => rt.isLive);
  await settle();
  return rt;
}

/** Streams "a" and "b", each published by "pub-a" / "pub-b" and live, on one manager. */
async function twoLive(): Promise<{ m: SessionManager; a: StreamRecord; b: StreamRecord; ra: StreamRuntime; rb: StreamRuntime }> {
  const a = await newStream("a");
  const b = await newStream("b");
  const m = await manager();
  await publish(m, a, "pub-a");
  await publish(m, b, "pub-b");
  return { m, a, b, ra: await goLive(m, a), rb: await goLive(m, b) };
}

/** Every stream.started is followed by exactly one stream.idle before the next. */
function expectPaired(names: string[]): void {
  const lifecycle = names.filter((n) => n === "stream.started" || n === "stream.idle");
  expect(lifecycle.length % 2).toBe(0);
  lifecycle.forEach((n, i) => expect(n).toBe(i % 2 === 0 ? "stream.started" : "stream.idle"));
}

describe("SessionManager", () => {
  it("admits a publish by its stream's key only, and not a suspended stream's", async () => {
    const cam = await newStream("cam");
    const m = await manager();
    expect(m.admit("no-such-key", "pub-x")).toEqual({ refusal: expect.objectContaining({ reason: "unknown stream key" }) });
    expect(m.admit(cam.streamKey!, "pub-1")).toEqual({ alias: cam.id });

    await w.store.streams.update(cam.id, { suspended: true });
    await m.heard({ streamId: cam.id, change: "changed" });
    expect(await publish(m, cam, "pub-2")).toBe(`stream ${cam.id} is suspended`);
    expect(m.liveCount).toBe(0);
  });

  it("a publish opens one session, which goes live once its pipeline plays", async () => {
    const cam = await newStream("cam");
    const m = await manager();
    expect(await publish(m, cam, "pub-1")).toBeUndefined();
    expect(m.liveCount).toBe(1);
    expect(m.liveSession(cam.id)!.isLive).toBe(false);
    const rt = await goLive(m, cam);
    expect(rt.currentPublisher).toBe("pub-1");
    expect(w.events.names(cam.id)).toEqual(["stream.started"]);
    expect(m.rates(cam.id)).toBeDefined();
    await m.shutdown();
  });

  it("a second publisher while the first one's session is opening is refused", async () => {
    const cam = await newStream("cam");
    const m = await manager();
    m.admit(cam.streamKey!, "pub-1");
    m.admit(cam.streamKey!, "pub-2");
    const first = m.onPublishStart("pub-1", cam.streamKey!);
    const second = await m.onPublishStart("pub-2", cam.streamKey!);
    expect(second?.reason).toBe("another publisher of this stream is starting: reconnect in a moment");
    expect(await first).toBeUndefined();
    expect(m.liveSession(cam.id)!.currentPublisher).toBe("pub-1");
    await m.shutdown();
  });

  it("a second publisher while one is live takes the session over: the first is let go, the session and its liveness stay", async () => {
    const cam = await newStream("cam");
    const m = await manager();
    await publish(m, cam, "pub-1");
    const rt = await goLive(m, cam);
    expect(await publish(m, cam, "pub-2")).toBeUndefined();
    expect(w.disconnected).toEqual([{ publisherId: "pub-1", reason: "replaced by a newer publisher of this stream" }]);
    expect(m.liveSession(cam.id)).toBe(rt);
    expect(rt.currentPublisher).toBe("pub-2");
    // The old publisher's late departure does not touch the session.
    m.onPublishEnd("pub-1");
    await settle();
    expect(rt.isLive).toBe(true);
    expect(w.events.names(cam.id)).toEqual(["stream.started"]);
    await m.shutdown();
  });

  it("one stream's pipeline failure ends its session only: another stream stays live, its pipeline untouched", async () => {
    const { m, a, b, ra, rb } = await twoLive();
    const bRun = w.pipelines.latest(b.id);

    for (let n = 0; n < MAX_PIPELINE_RESTARTS; n++) {
      w.pipelines.latest(a.id).exit(1);
      await w.clock.advance(restartDelayMs(n));
    }
    w.pipelines.latest(a.id).exit(1);
    await ra.closed;
    await settle();

    expect(ra.endReason).toBe("pipeline failed");
    expect(m.liveSession(a.id)).toBeUndefined();
    expect(m.liveSession(b.id)).toBe(rb);
    expect(rb.isLive).toBe(true);
    expect(bRun.stops).toBe(0);
    expect(w.pipelines.latest(b.id)).toBe(bRun);
    expect(w.events.names(a.id)).toEqual(["stream.started", "stream.idle"]);
    expect(w.events.names(b.id)).toEqual(["stream.started"]);
    expect(w.disconnected.map((d) => d.publisherId)).toEqual(["pub-a"]);
    expect((await w.store.streams.get(b.id))!.isActive).toBe(true);
    await m.shutdown();
  });

  it("one stream's publisher leaving and its window running out leaves another stream live", async () => {
    const { m, a, b, ra, rb } = await twoLive();
    m.onPublishEnd("pub-a");
    await until("a's window is running", () => w.clock.pendingDelays().includes(10_000));
    await w.clock.advance(10_000);
    await ra.closed;
    expect(rb.isLive).toBe(true);
    expect(m.liveCount).toBe(1);
    expectPaired(w.events.names(a.id));
    expect(w.events.names(b.id)).toEqual(["stream.started"]);
    await m.shutdown();
  });

  it("shutdown ends every session, each with its stream.idle, and refuses new publishes", async () => {
    const a = await newStream("a");
    const b = await newStream("b");
    const c = await newStream("c");
    const m = await manager();
    for (const [s, p] of [[a, "pub-a"], [b, "pub-b"]] as const) await publish(m, s, p);
    const ra = await goLive(m, a);
    const rb = await goLive(m, b);
    // c's publisher left: its session waits in its reconnect window.
    await publish(m, c, "pub-c");
    const rc = await goLive(m, c);
    m.onPublishEnd("pub-c");
    await until("c is idle", () => w.events.names(c.id).includes("stream.idle"));

    await m.shutdown();
    expect(m.liveCount).toBe(0);
    for (const rt of [ra, rb, rc]) expect(rt.endReason).toBe("shutdown");
    for (const s of [a, b, c]) {
      expectPaired(w.events.names(s.id));
      expect((await w.store.streams.get(s.id))!.isActive).toBe(false);
    }
    expect((await w.store.sessions.listOpen()).length).toBe(0);
    expect(await publish(m, a, "pub-late")).toBe("the server is shutting down: reconnect in a moment");
  });

  it("storage failing ends every live session with the problem as the reason", async () => {
    const { m, a, b, ra, rb } = await twoLive();
    await m.storageFailed("the data directory's disk is full");
    for (const rt of [ra, rb]) {
      expect((await w.store.sessions.get(rt.session.id))!.endReason).toBe("storage unavailable: the data directory's disk is full");
    }
    w.storage.problem = "the data directory's disk is full";
    expect(await publish(m, a, "pub-again")).toBe("storage unavailable on the server: reconnect later");
  });

  it("MAX_LIVE_STREAMS_PER_USER: a user's next stream is refused while the cap is reached, admitted once one ends", async () => {
    const a = await newStream("a");
    const b = await newStream("b");
    const m = await manager({ maxLiveStreamsPerUser: 1 });
    await publish(m, a, "pub-a");
    expect(await publish(m, b, "pub-b")).toMatch(/already has 1 live streams, the limit/);
    await m.liveSession(a.id)!.stop("terminated");
    await settle();
    expect(await publish(m, b, "pub-b2")).toBeUndefined();
    await m.shutdown();
  });

  it("MAX_LIVE_STREAMS_PER_USER holds across nodes: a stream held by another node counts", async () => {
    const a = await newStream("a");
    const b = await newStream("b");
    const here = await manager({ maxLiveStreamsPerUser: 1 });
    const there = await manager({ maxLiveStreamsPerUser: 1, nodeId: "node-there" });
    expect(await publish(there, a, "pub-a")).toBeUndefined();
    expect(await publish(here, b, "pub-b")).toMatch(/already has 1 live streams, the limit \(MAX_LIVE_STREAMS_PER_USER=1\)/);
    expect(here.liveCount).toBe(0);
    await there.shutdown();
    expect(await publish(here, b, "pub-b2")).toBeUndefined();
    await here.shutdown();
  });

  it("a terminate stored while the session is being opened ends it once open, and a later session is not touched", async () => {
    const cam = await newStream("cam");
    const m = await manager();
    m.admit(cam.streamKey!, "pub-1");
    const opening = m.onPublishStart("pub-1", cam.streamKey!);
    // Sent through another node: stored (and announced), while this node has no session to end yet.
    await w.store.transaction(async (tx) => tx.nodes.recordControl(cam.id, true));
    expect(await opening).toBeUndefined();
    const first = m.liveSession(cam.id);
    expect(first).toBeDefined();
    await until("the session opened under the terminate ends", () => first!.isEnding);
    await first!.closed;
    expect(first!.endReason).toBe("terminated");
    // The next publish opens a session the old terminate does not end.
    expect(await publish(m, cam, "pub-2")).toBeUndefined();
    const second = await goLive(m, cam);
    await m.reconcile();
    expect(second.isLive).toBe(true);
    await m.shutdown();
  });

  it("a session whose lease another node took stops without writing: no stream.idle, no end, no counters from here", async () => {
    const cam = await newStream("cam");
    const m = await manager();
    await publish(m, cam, "pub-1");
    const rt = await goLive(m, cam);
    const before = (await w.store.sessions.get(rt.session.id))!;
    // Another node took the stream (its lease ran out while this one was paused) and ended the session.
    await w.store.db.run("UPDATE streams SET live_node = 'node-b', live_epoch = live_epoch + 1 WHERE id = ?", [cam.id]);
    await m.leasesHeld(await w.store.nodes.beat({ id: w.deps.nodeId, roles: ["ingest"], internalUrl: null, rtmpAddress: null, startedAt: 0 }, 10_000));
    await rt.closed;
    expect(rt.endReason).toBe("lease lost");
    expect(w.disconnected.map((d) => d.publisherId)).toEqual(["pub-1"]);
    expect(w.events.names(cam.id)).toEqual(["stream.started"]);
    const after = (await w.store.sessions.get(rt.session.id))!;
    expect(after.endedAt).toBeNull();
    expect(after.sourceSegments).toBe(before.sourceSegments);
    // The other node's lease is untouched: this one gave nothing back.
    expect(await w.store.nodes.holder(cam.id)).toBe("node-b");
    expect(m.liveCount).toBe(0);
  });

  it("an end that could not be written keeps the lease until it is: the next publish waits, and the stream never has two open sessions", async () => {
    const cam = await newStream("cam");
    const m = await manager();
    await publish(m, cam, "pub-1");
    const first = await goLive(m, cam);
    const realTransaction = w.store.transaction;
    w.store.transaction = (() => Promise.reject(new Error("SQLITE_FULL: database or disk is full"))) as typeof realTransaction;
    m.interrupt(cam.id, "terminated");
    await first.closed;
    expect((await w.store.sessions.get(first.session.id))!.endedAt).toBeNull();
    expect(await w.store.nodes.holder(cam.id)).toBe(w.deps.nodeId);
    // The encoder is back before the end could be written: its session waits for it.
    w.store.transaction = realTransaction;
    m.admit(cam.streamKey!, "pub-2");
    const next = m.onPublishStart("pub-2", cam.streamKey!);
    await w.clock.advance(2000);
    expect(await next).toBeUndefined();
    expect((await w.store.sessions.get(first.session.id))!.endedAt).not.toBeNull();
    expect((await w.store.sessions.listOpenForParent(cam.id)).map((s) => s.id)).toEqual([m.liveSession(cam.id)!.session.id]);
    await goLive(m, cam);
    await m.shutdown();
    expectPaired(w.events.names(cam.id));
    expect((await w.store.sessions.listOpenForParent(cam.id))).toEqual([]);
  });
});
