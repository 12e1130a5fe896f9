import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { migrate, openDatabase } from "../../src/db/connection";
import { openStore, type Store } from "../../src/db";
import { tempDir } from "../helpers/server";

describe("database", () => {
  it("opens in WAL mode and applies each migration once", () => {
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

  it("applies new numbered migrations in order, each atomically", () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, "002_second.sql"), "CREATE TABLE b (x INTEGER); INSERT INTO b VALUES (2);");
    fs.writeFileSync(path.join(dir, "001_first.sql"), "CREATE TABLE a (x INTEGER);");
    fs.writeFileSync(path.join(dir, "003_broken.sql"), "CREATE TABLE c (x INTEGER); THIS IS NOT SQL;");
    const db = new Database(":memory:");
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
  it("hashes the keys of streams created before it, and finds only the exact value", () => {
    const dir = tempDir();
    const before = path.join(dir, "before");
    fs.mkdirSync(before);
    const all = path.resolve(__dirname, "../../src/db/migrations");
    for (const f of fs.readdirSync(all).filter((f) => /^00[12]_/.test(f))) fs.copyFileSync(path.join(all, f), path.join(before, f));
    const file = path.join(dir, "onair.db");
    const old = openDatabase(file, before);
    old.prepare("INSERT INTO users (id, name, created_at) VALUES ('u', 'u', 0)").run();
    old.prepare("INSERT INTO streams (id, user_id, name, stream_key, playback_id, created_at) VALUES ('s', 'u', 'old', 'abcd-efgh-ijkl-mnop', 'playbackidabcdef', 0)").run();
    old.close();

    const store = openStore(file);
    try {
      expect(store.streams.getByStreamKey("abcd-efgh-ijkl-mnop")?.id).toBe("s");
      expect(store.streams.getByPlaybackId("playbackidabcdef")?.id).toBe("s");
      for (const wrong of ["abcd-efgh-ijkl-mnoq", "ABCD-EFGH-IJKL-MNOP", "abcd-efgh-ijkl-mno", "", "' OR 1=1 --"]) {
        expect(store.streams.getByStreamKey(wrong)).toBeUndefined();
      }
      expect(store.streams.getByPlaybackId("playbackidabcdeF")).toBeUndefined();
      const created = store.streams.create({ userId: "u", name: "new", profiles: [], record: false, playbackPolicy: null });
      expect(store.streams.getByStreamKey(created.streamKey!)?.id).toBe(created.id);
      expect(store.streams.getByPlaybackId(created.playbackId!)?.id).toBe(created.id);
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true });
    }
  });
});

describe("repositories", () => {
  let dir: string;
  let store: Store;
  let userId: string;

  beforeEach(() => {
    dir = tempDir();
    store = openStore(path.join(dir, "onair.db"));
    userId = store.users.getOrCreate("alice").id;
  });
  afterEach(() => {
    store.close();
    fs.rmSync(dir, { recursive: true });
  });

  const newStream = (over: Partial<{ record: boolean; name: string }> = {}) =>
    store.streams.create({ userId, name: over.name ?? "cam", profiles: [{ name: "360p", bitrate: 1e6, fps: 30, width: 640, height: 360 }], record: over.record ?? false, playbackPolicy: null });

  it("users: getOrCreate is idempotent; keys resolve to their user only by the exact key", () => {
    expect(store.users.getOrCreate("alice").id).toBe(userId);
    const key = store.apiKeys.create(userId);
    expect(store.apiKeys.userIdForKey(key)).toBe(userId);
    expect(store.apiKeys.userIdForKey(key + "x")).toBeUndefined();
    const stored = store.db.prepare("SELECT key_hash FROM api_keys").all() as { key_hash: string }[];
    expect(stored.map((r) => r.key_hash)).not.toContain(key);
  });

  it("sessions: start copies record and profiles, creates the child stream, end closes both", () => {
    const parent = newStream({ record: true });
    const session = store.sessions.start(parent, 1000);
    expect(session).toMatchObject({ parentId: parent.id, userId, record: true, profiles: parent.profiles, createdAt: 1000, endedAt: null });
    const child = store.streams.get(session.id)!;
    expect(child).toMatchObject({ parentId: parent.id, name: parent.name, streamKey: null, record: true });

    // Later changes to the parent do not reach the running session.
    store.streams.update(parent.id, { record: false });
    expect(store.sessions.get(session.id)!.record).toBe(true);

    store.sessions.addProgress(session.id, { sourceSegments: 2, sourceSegmentsDuration: 4, transcodedSegments: 6, transcodedSegmentsDuration: 12, sourceBytes: 100 }, 2000);
    store.sessions.addProgress(session.id, { sourceSegments: 1, sourceSegmentsDuration: 2 }, 3000);
    for (const s of [store.sessions.get(session.id)!, store.streams.get(session.id)!, store.streams.get(parent.id)!]) {
      expect(s).toMatchObject({ sourceSegments: 3, sourceSegmentsDuration: 6, transcodedSegments: 6, transcodedSegmentsDuration: 12, sourceBytes: 100, lastSeen: 3000 });
    }

    expect(store.sessions.listOpen().map((s) => s.id)).toEqual([session.id]);
    expect(store.sessions.end(session.id, 4000)).toBe(true);
    expect(store.sessions.end(session.id, 5000)).toBe(false);
    expect(store.sessions.get(session.id)).toMatchObject({ endedAt: 4000, lastSeen: 4000 });
    expect(store.sessions.listOpen()).toEqual([]);
  });

  it("sessions: refuses to start on a child stream", () => {
    const parent = newStream();
    const session = store.sessions.start(parent);
    expect(() => store.sessions.start(store.streams.get(session.id)!)).toThrow(/child stream/);
  });

  it("sessions: lists by user and by parent, recorded only on request, newest first", () => {
    const a = newStream({ record: true });
    const b = newStream();
    const s1 = store.sessions.start(a);
    const s2 = store.sessions.start(b);
    const s3 = store.sessions.start(a);
    expect(store.sessions.list(userId, { limit: 10 }).items.map((s) => s.id)).toEqual([s3.id, s2.id, s1.id]);
    expect(store.sessions.listForParent(a.id, { recordedOnly: false }, { limit: 10 }).items.map((s) => s.id)).toEqual([s3.id, s1.id]);
    expect(store.sessions.listForParent(b.id, { recordedOnly: true }, { limit: 10 }).items).toEqual([]);
  });

  it("streams: soft delete hides the stream and its children but keeps the key reserved", () => {
    const parent = newStream();
    const session = store.sessions.start(parent);
    store.streams.softDelete(parent.id);
    expect(store.streams.get(parent.id)).toBeUndefined();
    expect(store.streams.get(session.id)).toBeUndefined();
    expect(store.streams.getByStreamKey(parent.streamKey!)).toBeUndefined();
    expect(store.streams.list(userId, { streamsOnly: false, filters: {} }, { limit: 10 }).items).toEqual([]);
    const row = store.db.prepare("SELECT stream_key FROM streams WHERE id = ?").get(parent.id) as { stream_key: string };
    expect(row.stream_key).toBe(parent.streamKey);
  });

  it("streams: name filter matches substrings literally, case-insensitively", () => {
    newStream({ name: "Studio A" });
    newStream({ name: "100%_done" });
    const names = (name: string) => store.streams.list(userId, { streamsOnly: true, filters: { name } }, { limit: 10 }).items.map((s) => s.name);
    expect(names("studio")).toEqual(["Studio A"]);
    expect(names("%_")).toEqual(["100%_done"]);
    expect(names("_")).toEqual(["100%_done"]);
  });

  it("webhooks: a fan-out pages through the owner's webhooks in the order they were made", () => {
    const other = store.users.getOrCreate("bob").id;
    expect(store.webhooks.anyForUser(userId)).toBe(false);
    const made = ["a", "b", "c"].map((name) =>
      store.webhooks.create(userId, { name, url: `http://x/${name}`, events: ["stream.started"], sharedSecret: null, streamId: null }),
    );
    store.webhooks.create(other, { name: "d", url: "http://x/d", events: ["stream.started"], sharedSecret: null, streamId: null });
    expect(store.webhooks.anyForUser(userId)).toBe(true);
    const first = store.webhooks.pageForUser(userId, 0, 2);
    expect(first.map((w) => w.id)).toEqual([made[0]!.id, made[1]!.id]);
    expect(store.webhooks.pageForUser(userId, first[1]!.seq, 2).map((w) => w.id)).toEqual([made[2]!.id]);
    expect(store.webhooks.pageForUser(userId, made[2]!.seq, 2)).toEqual([]);
  });
});
