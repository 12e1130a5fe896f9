import fs from "node:fs";
import path from "node:path";
import { migrate, openDatabase } from "../../../src/db/connection";
import { SqliteConnection } from "../../../src/db/sqlite";
import { openStore, type Store } from "../../../src/db";
import { dropTestDatabase, openTestStore } from "../../helpers/database";
import { tempDir } from "../../helpers/server";

describe("database", () => {
  it("opens in WAL mode and applies each migration once", async () => {
    const dir = tempDir();
    const file = path.join(dir, "onair.db");
    const db = openDatabase(file);
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    const versions = db.prepare("SELECT version FROM schema_migrations").all();
    expect(versions.length).toBeGreaterThanOrEqual(1);
    db.close();
    const again = openDatabase(file);
    expect(again.prepare("SELECT version FROM schema_migrations").all()).toEqual(versions);
    again.close();
    fs.rmSync(dir, { recursive: true });
  });

  it("applies new numbered migrations in order, each atomically", async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, "002_second.sql"), "CREATE TABLE b (x INTEGER); INSERT INTO b VALUES (2);");
    fs.writeFileSync(path.join(dir, "001_first.sql"), "CREATE TABLE a (x INTEGER);");
    fs.writeFileSync(path.join(dir, "003_broken.sql"), "CREATE TABLE c (x INTEGER); THIS IS NOT SQL;");
    const db = new SqliteConnection(":memory:");
    expect(() => migrate(db, dir)).toThrow();
    // 001 and 002 stay applied; the broken 003 left nothing behind.
    expect(db.prepare("SELECT version FROM schema_migrations ORDER BY version").all()).toEqual([{ version: 1 }, { version: 2 }]);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'c'").get()).toBeUndefined();
    fs.writeFileSync(path.join(dir, "003_broken.sql"), "CREATE TABLE c (x INTEGER);");
    expect(migrate(db, dir)).toEqual([3]);
    db.close();
    fs.rmSync(dir, { recursive: true });
  });
});

describe("stream keys and playback ids found by hash (migration 003)", () => {
  it("hashes the keys of streams created before it, and finds only the exact value", async () => {
    const dir = tempDir();
    const before = path.join(dir, "before");
    fs.mkdirSync(before);
    const all = path.resolve(__dirname, "../../../src/db/migrations/sqlite");
    for (const f of fs.readdirSync(all).filter((f) => /^00[12]_/.test(f))) fs.copyFileSync(path.join(all, f), path.join(before, f));
    const file = path.join(dir, "onair.db");
    const old = openDatabase(file, before);
    old.prepare("INSERT INTO users (id, name, created_at) VALUES ('u', 'u', 0)").run();
    old.prepare("INSERT INTO streams (id, user_id, name, stream_key, playback_id, created_at) VALUES ('s', 'u', 'old', 'abcd-efgh-ijkl-mnop', 'playbackidabcdef', 0)").run();
    old.close();

    const store = await openStore(file);
    try {
      expect((await store.streams.getByStreamKey("abcd-efgh-ijkl-mnop"))?.id).toBe("s");
      expect((await store.streams.getByPlaybackId("playbackidabcdef"))?.id).toBe("s");
      for (const wrong of ["abcd-efgh-ijkl-mnoq", "ABCD-EFGH-IJKL-MNOP", "abcd-efgh-ijkl-mno", "", "' OR 1=1 --"]) {
        expect(await store.streams.getByStreamKey(wrong)).toBeUndefined();
      }
      expect(await store.streams.getByPlaybackId("playbackidabcdeF")).toBeUndefined();
      const created = await store.streams.create({ userId: "u", name: "new", profiles: [], record: false, playbackPolicy: null });
      expect((await store.streams.getByStreamKey(created.streamKey!))?.id).toBe(created.id);
      expect((await store.streams.getByPlaybackId(created.playbackId!))?.id).toBe(created.id);
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true });
    }
  });
});

describe("repositories", () => {
  let dir: string;
  let store: Store;
  let userId: string;

  beforeEach(async () => {
    dir = tempDir();
    // On PostgreSQL when TEST_DATABASE_URL is set: the repositories run the same on both.
    store = await openTestStore(dir);
    userId = (await store.users.getOrCreate("alice")).id;
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true });
    await dropTestDatabase(dir);
  });

  const newStream = (over: Partial<{ record: boolean; name: string }> = {}) =>
    store.streams.create({ userId, name: over.name ?? "cam", profiles: [{ name: "360p", bitrate: 1e6, fps: 30, width: 640, height: 360 }], record: over.record ?? false, playbackPolicy: null });

  it("users: getOrCreate is idempotent; keys resolve to their user only by the exact key", async () => {
    expect((await store.users.getOrCreate("alice")).id).toBe(userId);
    const key = await store.apiKeys.create(userId);
    expect(await store.apiKeys.userIdForKey(key)).toBe(userId);
    expect(await store.apiKeys.userIdForKey(key + "x")).toBeUndefined();
    const stored = await store.db.all<{ key_hash: string }>("SELECT key_hash FROM api_keys");
    expect(stored.map((r) => r.key_hash)).not.toContain(key);
  });

  it("sessions: start copies record and profiles, creates the child stream, end closes both", async () => {
    const parent = await newStream({ record: true });
    const session = await store.sessions.start(parent, 1000);
    expect(session).toMatchObject({ parentId: parent.id, userId, record: true, profiles: parent.profiles, createdAt: 1000, endedAt: null });
    const child = (await store.streams.get(session.id))!;
    expect(child).toMatchObject({ parentId: parent.id, name: parent.name, streamKey: null, record: true });

    // Later changes to the parent do not reach the running session.
    await store.streams.update(parent.id, { record: false });
    expect((await store.sessions.get(session.id))!.record).toBe(true);

    await store.sessions.addProgress(session.id, { sourceSegments: 2, sourceSegmentsDuration: 4, transcodedSegments: 6, transcodedSegmentsDuration: 12, sourceBytes: 100 }, 2000);
    await store.sessions.addProgress(session.id, { sourceSegments: 1, sourceSegmentsDuration: 2 }, 3000);
    for (const s of [(await store.sessions.get(session.id))!, (await store.streams.get(session.id))!, (await store.streams.get(parent.id))!]) {
      expect(s).toMatchObject({ sourceSegments: 3, sourceSegmentsDuration: 6, transcodedSegments: 6, transcodedSegmentsDuration: 12, sourceBytes: 100, lastSeen: 3000 });
    }

    expect((await store.sessions.listOpen()).map((s) => s.id)).toEqual([session.id]);
    expect(await store.sessions.end(session.id, 4000)).toBe(true);
    expect(await store.sessions.end(session.id, 5000)).toBe(false);
    expect(await store.sessions.get(session.id)).toMatchObject({ endedAt: 4000, lastSeen: 4000 });
    expect(await store.sessions.listOpen()).toEqual([]);
  });

  it("sessions: refuses to start on a child stream", async () => {
    const parent = await newStream();
    const session = await store.sessions.start(parent);
    await expect(store.sessions.start((await store.streams.get(session.id))!)).rejects.toThrow(/child stream/);
  });

  it("sessions: lists by user and by parent, recorded only on request, newest first", async () => {
    const a = await newStream({ record: true });
    const b = await newStream();
    const s1 = await store.sessions.start(a);
    const s2 = await store.sessions.start(b);
    const s3 = await store.sessions.start(a);
    expect((await store.sessions.list(userId, { limit: 10 })).items.map((s) => s.id)).toEqual([s3.id, s2.id, s1.id]);
    expect((await store.sessions.listForParent(a.id, { recordedOnly: false }, { limit: 10 })).items.map((s) => s.id)).toEqual([s3.id, s1.id]);
    expect((await store.sessions.listForParent(b.id, { recordedOnly: true }, { limit: 10 })).items).toEqual([]);
  });

  it("streams: soft delete hides the stream and its children but keeps the key reserved", async () => {
    const parent = await newStream();
    const session = await store.sessions.start(parent);
    await store.streams.softDelete(parent.id);
    expect(await store.streams.get(parent.id)).toBeUndefined();
    expect(await store.streams.get(session.id)).toBeUndefined();
    expect(await store.streams.getByStreamKey(parent.streamKey!)).toBeUndefined();
    expect((await store.streams.list(userId, { streamsOnly: false, filters: {} }, { limit: 10 })).items).toEqual([]);
    const row = (await store.db.get<{ stream_key: string }>("SELECT stream_key FROM streams WHERE id = ?", [parent.id]))!;
    expect(row.stream_key).toBe(parent.streamKey);
  });

  it("streams: name filter matches substrings literally, case-insensitively", async () => {
    await newStream({ name: "Studio A" });
    await newStream({ name: "100%_done" });
    const names = async (name: string) => (await store.streams.list(userId, { streamsOnly: true, filters: { name } }, { limit: 10 })).items.map((s) => s.name);
    expect(await names("studio")).toEqual(["Studio A"]);
    expect(await names("%_")).toEqual(["100%_done"]);
    expect(await names("_")).toEqual(["100%_done"]);
  });

  it("webhooks: a fan-out pages through the owner's webhooks in the order they were made", async () => {
    const other = (await store.users.getOrCreate("bob")).id;
    expect(await store.webhooks.anyForUser(userId)).toBe(false);
    const made = [];
    for (const name of ["a", "b", "c"]) made.push(await store.webhooks.create(userId, { name, url: `http://x/${name}`, events: ["stream.started"], sharedSecret: null, streamId: null }));
    await store.webhooks.create(other, { name: "d", url: "http://x/d", events: ["stream.started"], sharedSecret: null, streamId: null });
    expect(await store.webhooks.anyForUser(userId)).toBe(true);
    const first = await store.webhooks.pageForUser(userId, 0, 2);
    expect(first.map((w) => w.id)).toEqual([made[0]!.id, made[1]!.id]);
    expect((await store.webhooks.pageForUser(userId, first[1]!.seq, 2)).map((w) => w.id)).toEqual([made[2]!.id]);
    expect(await store.webhooks.pageForUser(userId, made[2]!.seq, 2)).toEqual([]);
  });
});
