import fs from "node:fs";
import path from "node:path";
import type { Fmp4Piece } from "../../../src/hls";
import type { StreamRecord } from "../../../src/db";
import { MAX_PIPELINE_RESTARTS, restartDelayMs, StreamRuntime } from "../../../src/sessions/streamRuntime";
import { liveWorld, settle, sourceMedia, until, type LiveWorld } from "../../helpers/liveSessions";

// A stream's live life, in process: fake pipelines the test drives (media, exits), a fake clock
// the test advances (reconnect windows, restart back-off), the project's store on a temp SQLite
// file, and the events and observer calls recorded. No ffmpeg runs, no time passes.

let media: Fmp4Piece[][];
beforeAll(async () => {
  media = await sourceMedia();
});

let w: LiveWorld;
let stream: StreamRecord;
let closed: StreamRuntime[];
beforeEach(async () => {
  w = await liveWorld();
  const userId = (await w.store.users.getOrCreate("alice")).id;
  stream = await w.store.streams.create({ userId, name: "cam", profiles: [], record: true, playbackPolicy: null });
  closed = [];
});
afterEach(async () => {
  await w.close();
});

async function open(publisherId = "pub-1"): Promise<StreamRuntime> {
  const claim = await w.store.nodes.claimStream(stream.id, w.deps.nodeId, 15_000);
  if (!claim.taken) throw new Error("the test's stream is held elsewhere");
  const rt = await StreamRuntime.open(stream, publisherId, w.deps, (s) => closed.push(s), { lease: claim.lease, controlSeq: 0 });
  rt.start();
  return rt;
}

/** The current run writes its media: segments complete, it becomes playable, the stream goes live. */
async function goLive(rt: StreamRuntime): Promise<void> {
  w.pipelines.latest().media(media);
  await until("the stream is live", () => rt.isLive);
  await settle();
}

const isActive = async (id: string) => (await w.store.streams.get(id))!.isActive;
const events = () => w.events.names(stream.id);

/** Every stream.started is followed by exactly one stream.idle before the next. */
function expectPaired(names: string[]): void {
  const lifecycle = names.filter((n) => n === "stream.started" || n === "stream.idle");
  expect(lifecycle.length % 2).toBe(0);
  lifecycle.forEach((n, i) => expect(n).toBe(i % 2 === 0 ? "stream.started" : "stream.idle"));
}

describe("StreamRuntime", () => {
  it("goes live only once its pipeline is playable: isActive, stream.started and observers together", async () => {
    const rt = await open();
    expect(w.pipelines.all).toHaveLength(1);
    await settle();
    expect(rt.isLive).toBe(false);
    expect(events()).toEqual([]);
    expect(await isActive(stream.id)).toBe(false);

    await goLive(rt);
    expect(events()).toEqual(["stream.started"]);
    expect(await isActive(stream.id)).toBe(true);
    expect(await isActive(rt.session.id)).toBe(true);
    await until("observers hear the session live", () => w.observer.count(`live ${stream.id}`) === 1);
    // The segments that made it playable are on disk, counted on the session.
    expect(w.observer.count(`segment ${stream.id}`)).toBeGreaterThan(0);
    await until("segment counters written", async () => ((await w.store.sessions.get(rt.session.id))!.sourceSegments ?? 0) > 0);
    await rt.stop("shutdown");
  });

  it("publisher lost: idle at once; back inside the window: the same session goes live again", async () => {
    const rt = await open();
    await goLive(rt);
    rt.detach("pub-1");
    await until("stream.idle", () => events().includes("stream.idle"));
    expect(await isActive(stream.id)).toBe(false);
    expect(rt.isLive).toBe(false);
    expect(rt.isEnding).toBe(false);
    await until("the window is running", () => w.clock.pendingDelays().includes(10_000));
    expect(w.observer.count(`lost ${stream.id}`)).toBe(1);

    await w.clock.advance(9_000);
    expect(closed).toEqual([]);
    rt.attach("pub-2");
    await until("a second run started", () => w.pipelines.all.length === 2);
    await goLive(rt);
    expect(rt.currentPublisher).toBe("pub-2");
    expect(events()).toEqual(["stream.started", "stream.idle", "stream.started"]);
    // The window was called off: time passing does not end the session.
    await w.clock.advance(60_000);
    expect(closed).toEqual([]);
    expect((await w.store.sessions.listForParent(stream.id, { recordedOnly: false }, { limit: 10 })).items).toHaveLength(1);

    await rt.stop("shutdown");
    expectPaired(events());
    expect(events()).toEqual(["stream.started", "stream.idle", "stream.started", "stream.idle"]);
  });

  it("the window runs out: the session ends, its playlists and row closed, observers told once", async () => {
    const rt = await open();
    await goLive(rt);
    rt.detach("pub-1");
    await until("the window is running", () => w.clock.pendingDelays().includes(10_000));
    await w.clock.advance(9_999);
    expect(closed).toEqual([]);
    await w.clock.advance(1);
    await rt.closed;
    expect(closed).toEqual([rt]);
    const s = (await w.store.sessions.get(rt.session.id))!;
    expect(s.endedAt).toBe(w.clock.now());
    expect(s.endReason).toBe("publisher left: it did not reconnect within 10 s");
    expect(s.record).toBe(true);
    // The idle was raised when the publisher left: the end owes none more.
    expect(events()).toEqual(["stream.started", "stream.idle"]);
    expect(w.observer.count(`ended ${stream.id}`)).toBe(1);
    const playlist = fs.readFileSync(path.join(w.deps.hlsDir, stream.playbackId!, "0", "index.m3u8"), "utf8");
    expect(playlist).toContain("#EXT-X-ENDLIST");
  });

  it("a stream's own reconnectWindow of 0: the session ends when its publisher leaves", async () => {
    await w.store.streams.update(stream.id, { reconnectWindow: 0 });
    const rt = await open();
    await goLive(rt);
    rt.detach("pub-1");
    await until("the run is stopped after the grace", () => w.clock.pendingDelays().length > 0);
    await w.clock.advance(1200);
    await rt.closed;
    expect((await w.store.sessions.get(rt.session.id))!.endReason).toBe("publisher left");
    expectPaired(events());
  });

  it("a pipeline that dies under a live publisher restarts with back-off, stays live, and ends after the last restart", async () => {
    const rt = await open();
    await goLive(rt);
    for (let n = 0; n < MAX_PIPELINE_RESTARTS; n++) {
      w.pipelines.latest().exit(1);
      expect(w.clock.pendingDelays()).toContain(restartDelayMs(n));
      await w.clock.advance(restartDelayMs(n) - 1);
      expect(w.pipelines.all).toHaveLength(n + 1);
      await w.clock.advance(1);
      expect(w.pipelines.all).toHaveLength(n + 2);
      // Viewers keep the stream: no idle between runs.
      expect(rt.isLive).toBe(true);
    }
    expect(restartDelayMs(0)).toBeLessThan(restartDelayMs(1));
    expect(events()).toEqual(["stream.started"]);

    w.pipelines.latest().exit(1);
    await rt.closed;
    const reason = (await w.store.sessions.get(rt.session.id))!.endReason;
    expect(reason).toBe(`pipeline failed: ffmpeg exited with code 1 after ${MAX_PIPELINE_RESTARTS} restarts`);
    expect(w.disconnected).toEqual([{ publisherId: "pub-1", reason }]);
    expect(events()).toEqual(["stream.started", "stream.idle"]);
  });

  it("a pipeline that crashes while the disk is full ends the session saying so, without a restart", async () => {
    const rt = await open();
    await goLive(rt);
    w.storage.problem = "the data directory's disk is full";
    w.pipelines.latest().exit(1);
    await rt.closed;
    expect(w.pipelines.all).toHaveLength(1);
    expect((await w.store.sessions.get(rt.session.id))!.endReason).toBe("storage unavailable: the data directory's disk is full");
    // The publisher hears the kind of problem, not the server's paths.
    expect(w.disconnected).toEqual([{ publisherId: "pub-1", reason: "storage unavailable on the server: reconnect later" }]);
    expectPaired(events());
  });

  it("going live cannot be written: the session ends as storage unavailable, owes no idle, and its end is retried until written", async () => {
    const rt = await open();
    const realTransaction = w.store.transaction;
    w.store.transaction = (() => Promise.reject(new Error("SQLITE_FULL: database or disk is full"))) as typeof realTransaction;
    w.pipelines.latest().media(media);
    await until("the session is ending", () => rt.isEnding);
    await until("the end is waiting to be retried", () => w.clock.pendingDelays().includes(2000));
    expect(rt.isLive).toBe(false);
    expect(rt.endReason).toBe("storage unavailable");
    expect((await w.store.sessions.get(rt.session.id))!.endedAt).toBeNull();

    w.store.transaction = realTransaction;
    await w.clock.advance(2000);
    await until("the end is written", async () => (await w.store.sessions.get(rt.session.id))!.endedAt !== null);
    expect((await w.store.sessions.get(rt.session.id))!.endReason).toBe("storage unavailable: the database cannot record the session going live");
    expect(events()).toEqual([]);
    expect(await isActive(stream.id)).toBe(false);
    expect(w.observer.count(`live ${stream.id}`)).toBe(0);
  });

  it("media refused: the session ends at once with the refusal as its reason", async () => {
    const rt = await open();
    await goLive(rt);
    rt.detach("pub-1", "video codec hevc is not supported");
    await rt.closed;
    expect((await w.store.sessions.get(rt.session.id))!.endReason).toBe("media refused: video codec hevc is not supported");
    expectPaired(events());
  });

  it("shutdown ends a live session: publisher disconnected, run stopped, stream.idle raised", async () => {
    const rt = await open();
    await goLive(rt);
    await rt.stop("shutdown");
    expect(w.pipelines.latest().stops).toBe(1);
    expect(w.disconnected.map((d) => d.publisherId)).toEqual(["pub-1"]);
    expect((await w.store.sessions.get(rt.session.id))!.endReason).toBe("shutdown");
    expect(events()).toEqual(["stream.started", "stream.idle"]);
    expect(await isActive(stream.id)).toBe(false);
  });

  it("a session that never played leaves no media folder and raises nothing", async () => {
    const rt = await open();
    await rt.stop("shutdown");
    expect(events()).toEqual([]);
    expect(fs.existsSync(path.join(w.deps.hlsDir, stream.playbackId!))).toBe(false);
    expect(w.observer.heard).toEqual([`ended ${stream.id}`]);
  });
});
