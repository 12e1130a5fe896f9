import fs from "node:fs";
import path from "node:path";
import { openDatabase } from "../../../../src/db/connection";
import { openStore, type Store } from "../../../../src/db";
import { dropTestDatabase, openTestStore } from "../../../helpers/database";
import { tempDir } from "../../../helpers/server";

// SRT ports on first use: the assignment's rules, its release, and the upgrade.

const RANGE = { first: 9000, last: 9002 };
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

async function streamOf(userName: string, pull = false): Promise<string> {
  const user = await store.users.getOrCreate(userName);
  const s = await store.streams.create({ userId: user.id, name: "s", profiles: [], record: false, playbackPolicy: null, ...(pull ? { pull: { source: "rtmp://example.com/live/x" } } : {}) });
  return s.id;
}

describe("SRT port assignment", () => {
  it("gives the lowest free port once, within a user's share and the range; never to a pulled stream", async () => {
    const [a1, a2, a3] = [await streamOf("alice"), await streamOf("alice"), await streamOf("alice")];
    expect(await store.streams.assignSrtPort(a1, RANGE, 2, 1000)).toEqual({ port: 9000 });
    // Asked again: the same port, its use noted.
    expect(await store.streams.assignSrtPort(a1, RANGE, 2, 2000)).toEqual({ port: 9000 });
    expect(await store.streams.get(a1)).toMatchObject({ srtPort: 9000, srtUsedAt: 2000 });
    expect((await store.streams.get(a1))!.srtPassphrase).toMatch(/^[0-9a-z]{24}$/);
    expect(await store.streams.assignSrtPort(a2, RANGE, 2)).toEqual({ port: 9001 });
    expect(await store.streams.assignSrtPort(a3, RANGE, 2)).toEqual({ refused: "share" });
    expect(await store.streams.srtPortsHeld((await store.streams.get(a1))!.userId)).toBe(2);
    expect(await store.streams.assignSrtPort(await streamOf("bob", true), RANGE, 2)).toEqual({ refused: "pulled" });
    expect(await store.streams.assignSrtPort(await streamOf("bob"), RANGE, 2)).toEqual({ port: 9002 });
    expect(await store.streams.assignSrtPort(await streamOf("carol"), RANGE, 2)).toEqual({ refused: "range" });
    expect(await store.streams.assignSrtPort("nope", RANGE, 2)).toEqual({ refused: "gone" });
  });

  it("a pull set or a delete gives the port back; touchSrt moves its use forward only", async () => {
    const [a, b] = [await streamOf("alice"), await streamOf("alice")];
    await store.streams.assignSrtPort(a, RANGE, 3, 1000);
    await store.streams.assignSrtPort(b, RANGE, 3, 1000);
    await store.streams.touchSrt(a, 5000);
    await store.streams.touchSrt(a, 4000);
    expect((await store.streams.get(a))!.srtUsedAt).toBe(5000);
    await store.streams.update(a, { pull: { source: "rtmp://example.com/live/x" } });
    expect(await store.streams.get(a)).toMatchObject({ srtPort: null, srtPassphrase: null });
    await store.streams.touchSrt(a, 6000);
    expect(await store.streams.assignSrtPort(await streamOf("bob"), RANGE, 3)).toEqual({ port: 9000 });
    await store.streams.softDelete(b);
    expect(await store.streams.assignSrtPort(await streamOf("bob"), RANGE, 3)).toEqual({ port: 9001 });
  });
});

describe("the upgrade to ports on first use (SQLite migration 013)", () => {
  it("takes pulled streams' ports back and gives the others one idle period from now", async () => {
    const before = path.join(dir, "before");
    fs.mkdirSync(before);
    const all = path.resolve(__dirname, "../../../../src/db/migrations/sqlite");
    for (const f of fs.readdirSync(all).filter((f) => Number(f.slice(0, 3)) <= 12)) fs.copyFileSync(path.join(all, f), path.join(before, f));
    const file = path.join(dir, "upgrade.db");
    const old = openDatabase(file, before);
    old.prepare("INSERT INTO users (id, name, created_at) VALUES ('u', 'u', 0)").run();
    const insert = old.prepare("INSERT INTO streams (id, user_id, name, stream_key, stream_key_hash, playback_id, playback_id_hash, created_at, srt_port, srt_passphrase, pull) VALUES (?, 'u', 'n', ?, ?, ?, ?, 0, ?, 'p', ?)");
    insert.run("pushed", "k1", "h1", "p1", "ph1", 9000, null);
    insert.run("pulled", "k2", "h2", "p2", "ph2", 9001, JSON.stringify({ source: "rtmp://example.com/live/x" }));
    old.close();

    const upgraded = await openStore(file);
    try {
      const startedAt = Date.now();
      const pushed = (await upgraded.streams.get("pushed"))!;
      expect(pushed).toMatchObject({ srtPort: 9000, srtPassphrase: "p" });
      expect(Math.abs(pushed.srtUsedAt! - startedAt)).toBeLessThan(60_000);
      expect(await upgraded.streams.get("pulled")).toMatchObject({ srtPort: null, srtPassphrase: null, srtUsedAt: null });
    } finally {
      await upgraded.close();
    }
  });
});

describe("a stream's DVR window", () => {
  it("is stored on create, changed and cleared by update, and left alone by other changes", async () => {
    const user = await store.users.getOrCreate("alice");
    const s = await store.streams.create({ userId: user.id, name: "s", profiles: [], record: false, playbackPolicy: null, dvrWindow: 3600 });
    expect(s.dvrWindow).toBe(3600);
    await store.streams.update(s.id, { name: "t", reconnectWindow: 5 });
    expect(await store.streams.get(s.id)).toMatchObject({ name: "t", reconnectWindow: 5, dvrWindow: 3600 });
    await store.streams.update(s.id, { dvrWindow: 0 });
    expect((await store.streams.get(s.id))!.dvrWindow).toBe(0);
    await store.streams.update(s.id, { dvrWindow: null });
    expect((await store.streams.get(s.id))!.dvrWindow).toBeNull();
    expect((await streamOf("bob").then((id) => store.streams.get(id)))!.dvrWindow).toBeNull();
  });
});

describe("the upgrade to DVR windows (SQLite migration 016)", () => {
  it("streams created before it have none: the server's DVR_WINDOW_SECONDS applies", async () => {
    const before = path.join(dir, "before");
    fs.mkdirSync(before);
    const all = path.resolve(__dirname, "../../../../src/db/migrations/sqlite");
    for (const f of fs.readdirSync(all).filter((f) => Number(f.slice(0, 3)) <= 15)) fs.copyFileSync(path.join(all, f), path.join(before, f));
    const file = path.join(dir, "upgrade.db");
    const old = openDatabase(file, before);
    old.prepare("INSERT INTO users (id, name, created_at) VALUES ('u', 'u', 0)").run();
    old.prepare("INSERT INTO streams (id, user_id, name, stream_key, stream_key_hash, playback_id, playback_id_hash, created_at, reconnect_window) VALUES ('s', 'u', 'n', 'k', 'kh', 'p', 'ph', 0, 7)").run();
    old.close();

    const upgraded = await openStore(file);
    try {
      expect(await upgraded.streams.get("s")).toMatchObject({ reconnectWindow: 7, dvrWindow: null });
      await upgraded.streams.update("s", { dvrWindow: 120 });
      expect((await upgraded.streams.get("s"))!.dvrWindow).toBe(120);
    } finally {
      await upgraded.close();
    }
  });
});
