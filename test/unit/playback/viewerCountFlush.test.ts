import fs from "node:fs";
import type { Store } from "../../../src/db";
import { createLogger } from "../../../src/log";
import { startViewerCountFlush } from "../../../src/playback/viewerCountFlush";
import { ViewerCounter } from "../../../src/playback/viewers";
import { dropTestDatabase, openTestStore } from "../../helpers/database";
import { tempDir } from "../../helpers/server";

// The viewer_counts table on a real store (SQLite, or PostgreSQL with TEST_DATABASE_URL): each
// node's rows replaced by its latest counts, sums over the fresh rows of the caller's streams.

let dir: string;
let store: Store;
beforeEach(async () => {
  dir = tempDir();
  store = await openTestStore(dir);
});
afterEach(async () => {
  await store.close();
  await dropTestDatabase(dir);
  fs.rmSync(dir, { recursive: true, force: true });
});

async function streamOf(userName: string) {
  const user = await store.users.getOrCreate(userName);
  const s = await store.streams.create({ userId: user.id, name: `${userName}'s stream`, profiles: [], record: false, playbackPolicy: null });
  return { userId: user.id, streamId: s.id, playbackId: s.playbackId! };
}

const totals = async (userId: string, since: number, playbackId?: string) => Object.fromEntries(await store.viewerCounts.totalsForUser(userId, since, playbackId));

describe("viewer counts of several nodes", () => {
  it("sums the fresh rows of the caller's own streams", async () => {
    const a = await streamOf("alice");
    const a2 = await streamOf("alice");
    const b = await streamOf("bob");
    await store.viewerCounts.replaceForNode("n1", new Map([[a.playbackId, 2], [b.playbackId, 5]]), 10_000);
    await store.viewerCounts.replaceForNode("n2", new Map([[a.playbackId, 3], [a2.playbackId, 1]]), 12_000);
    // A node that stopped writing: its row is too old to count.
    await store.viewerCounts.replaceForNode("dead", new Map([[a.playbackId, 100]]), 1_000);
    // Made-up playback ids name no stream of anyone.
    await store.viewerCounts.replaceForNode("n3", new Map([["made-up", 7]]), 12_000);

    expect(await totals(a.userId, 5_000)).toEqual({ [a.playbackId]: 5, [a2.playbackId]: 1 });
    expect(await totals(a.userId, 5_000, a2.playbackId)).toEqual({ [a2.playbackId]: 1 });
    expect(await totals(a.userId, 5_000, b.playbackId)).toEqual({});
    expect(await totals(b.userId, 5_000)).toEqual({ [b.playbackId]: 5 });
    expect(await totals(a.userId, 11_000)).toEqual({ [a.playbackId]: 3, [a2.playbackId]: 1 });

    // A deleted stream has no viewers to report.
    await store.streams.softDelete(a2.streamId);
    expect(await totals(a.userId, 5_000)).toEqual({ [a.playbackId]: 5 });

    expect(await store.viewerCounts.deleteStale(5_000)).toBe(1);
    expect(await totals(a.userId, 0)).toEqual({ [a.playbackId]: 5 });
  });

  it("a node's new counts replace its old ones: ids it no longer counts, or counts at 0, are gone", async () => {
    const a = await streamOf("alice");
    const a2 = await streamOf("alice");
    await store.viewerCounts.replaceForNode("n1", new Map([[a.playbackId, 2], [a2.playbackId, 4]]), 1_000);
    await store.viewerCounts.replaceForNode("n1", new Map([[a.playbackId, 0]]), 2_000);
    expect(await totals(a.userId, 0)).toEqual({});
    await store.viewerCounts.replaceForNode("n1", new Map([[a2.playbackId, 1]]), 3_000);
    expect(await totals(a.userId, 0)).toEqual({ [a2.playbackId]: 1 });
    await store.viewerCounts.clearNode("n1");
    expect(await totals(a.userId, 0)).toEqual({});
  });

  it("the flush writes only the playback ids live on the node, and clears them when it stops", async () => {
    const live = await streamOf("alice");
    const idle = await streamOf("alice");
    const counter = new ViewerCounter();
    for (const v of ["v1", "v2", "v3"]) counter.seen(live.playbackId, v);
    counter.seen(idle.playbackId, "v1");
    const flush = startViewerCountFlush({ counter, store, log: createLogger("silent"), nodeId: "n1", intervalMs: 60_000, keep: (id) => id === live.playbackId });
    await flush.flushNow();
    expect(await totals(live.userId, 0)).toEqual({ [live.playbackId]: 3 });
    await flush.stop();
    expect(await totals(live.userId, 0)).toEqual({});
  });
});
