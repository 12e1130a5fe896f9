import fs from "node:fs";
import path from "node:path";
import { openStore, type Store } from "../../../src/db";
import { openDatabase } from "../../../src/db/connection";
import { createLogger } from "../../../src/log";
import { startViewerCountFlush } from "../../../src/playback/viewerCountFlush";
import { ViewerCounter, WEBRTC_VIEWER_PREFIX, type ViewerCount } from "../../../src/playback/viewers";
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

/** The summed viewers by playback id, as `viewers` (all protocols) only: most cases need no more. */
const totals = async (userId: string, since: number, playbackId?: string) =>
  Object.fromEntries([...(await store.viewerCounts.totalsForUser(userId, since, playbackId))].map(([id, c]) => [id, c.viewers]));
/** Counts a node writes, as `playback id → viewers` (none over WebRTC), or `[viewers, webrtc]`. */
const written = (entries: [string, number | [number, number]][]) =>
  new Map<string, ViewerCount>(entries.map(([id, n]) => [id, typeof n === "number" ? { viewers: n, webrtc: 0 } : { viewers: n[0], webrtc: n[1] }]));

describe("viewer counts of several nodes", () => {
  it("sums the fresh rows of the caller's own streams", async () => {
    const a = await streamOf("alice");
    const a2 = await streamOf("alice");
    const b = await streamOf("bob");
    await store.viewerCounts.replaceForNode("n1", written([[a.playbackId, 2], [b.playbackId, 5]]), 10_000);
    await store.viewerCounts.replaceForNode("n2", written([[a.playbackId, 3], [a2.playbackId, 1]]), 12_000);
    // A node that stopped writing: its row is too old to count.
    await store.viewerCounts.replaceForNode("dead", written([[a.playbackId, 100]]), 1_000);
    // Made-up playback ids name no stream of anyone.
    await store.viewerCounts.replaceForNode("n3", written([["made-up", 7]]), 12_000);

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

  it("sums the WebRTC viewers over the nodes as the total is, and replaces them with each write", async () => {
    const a = await streamOf("alice");
    const a2 = await streamOf("alice");
    await store.viewerCounts.replaceForNode("n1", written([[a.playbackId, [3, 2]], [a2.playbackId, [1, 0]]]), 10_000);
    await store.viewerCounts.replaceForNode("n2", written([[a.playbackId, [4, 1]]]), 10_000);
    // A dead node's WebRTC viewers drop out with its row.
    await store.viewerCounts.replaceForNode("dead", written([[a.playbackId, [9, 9]]]), 1_000);
    const all = async (playbackId?: string) => Object.fromEntries(await store.viewerCounts.totalsForUser(a.userId, 5_000, playbackId));
    expect(await all()).toEqual({ [a.playbackId]: { viewers: 7, webrtc: 3 }, [a2.playbackId]: { viewers: 1, webrtc: 0 } });
    expect(await all(a.playbackId)).toEqual({ [a.playbackId]: { viewers: 7, webrtc: 3 } });
    // The next write of a node replaces its WebRTC count as it does its total.
    await store.viewerCounts.replaceForNode("n1", written([[a.playbackId, [3, 0]]]), 11_000);
    expect(await all(a.playbackId)).toEqual({ [a.playbackId]: { viewers: 7, webrtc: 1 } });
  });

  it("a node's new counts replace its old ones: ids it no longer counts, or counts at 0, are gone", async () => {
    const a = await streamOf("alice");
    const a2 = await streamOf("alice");
    await store.viewerCounts.replaceForNode("n1", written([[a.playbackId, 2], [a2.playbackId, 4]]), 1_000);
    await store.viewerCounts.replaceForNode("n1", written([[a.playbackId, 0]]), 2_000);
    expect(await totals(a.userId, 0)).toEqual({});
    await store.viewerCounts.replaceForNode("n1", written([[a2.playbackId, 1]]), 3_000);
    expect(await totals(a.userId, 0)).toEqual({ [a2.playbackId]: 1 });
    await store.viewerCounts.clearNode("n1");
    expect(await totals(a.userId, 0)).toEqual({});
  });

  it("the flush writes only the playback ids live on the node, and clears them when it stops", async () => {
    const live = await streamOf("alice");
    const idle = await streamOf("alice");
    const counter = new ViewerCounter();
    for (const v of ["v1", "v2", `${WEBRTC_VIEWER_PREFIX}w1`]) counter.seen(live.playbackId, v);
    counter.seen(idle.playbackId, "v1");
    const flush = startViewerCountFlush({ counter, store, log: createLogger("silent"), nodeId: "n1", intervalMs: 60_000, keep: (id) => id === live.playbackId });
    await flush.flushNow();
    expect(Object.fromEntries(await store.viewerCounts.totalsForUser(live.userId, 0))).toEqual({ [live.playbackId]: { viewers: 3, webrtc: 1 } });
    await flush.stop();
    expect(await totals(live.userId, 0)).toEqual({});
  });
});

describe("the upgrade to WebRTC counts (SQLite migration 015)", () => {
  it("rows written before it count no WebRTC viewers; new writes carry them", async () => {
    const before = path.join(dir, "before");
    fs.mkdirSync(before);
    const all = path.resolve(__dirname, "../../../src/db/migrations/sqlite");
    for (const f of fs.readdirSync(all).filter((f) => Number(f.slice(0, 3)) <= 14)) fs.copyFileSync(path.join(all, f), path.join(before, f));
    const file = path.join(dir, "upgrade.db");
    const old = openDatabase(file, before);
    old.prepare("INSERT INTO users (id, name, created_at) VALUES ('u', 'u', 0)").run();
    old.prepare("INSERT INTO streams (id, user_id, name, stream_key, stream_key_hash, playback_id, playback_id_hash, created_at) VALUES ('s', 'u', 'n', 'k', 'kh', 'p1', 'ph', 0)").run();
    old.prepare("INSERT INTO viewer_counts (node_id, playback_id, count, updated_at) VALUES ('n1', 'p1', 2, 1000)").run();
    old.close();

    const upgraded = await openStore(file);
    try {
      expect(Object.fromEntries(await upgraded.viewerCounts.totalsForUser("u", 0))).toEqual({ p1: { viewers: 2, webrtc: 0 } });
      await upgraded.viewerCounts.replaceForNode("n1", new Map([["p1", { viewers: 2, webrtc: 1 }]]), 2000);
      expect(Object.fromEntries(await upgraded.viewerCounts.totalsForUser("u", 0))).toEqual({ p1: { viewers: 2, webrtc: 1 } });
    } finally {
      await upgraded.close();
    }
  });
});
