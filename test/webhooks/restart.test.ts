import { dropTestDatabase, openTestStore } from "../helpers/database";
import fs from "node:fs";
import path from "node:path";
import { openStore } from "../../src/db";
import { createEventSink } from "../../src/events";
import { createLogger } from "../../src/log";
import { apiClient, startTestServer, tempDir, type TestServer } from "../helpers/server";
import { ADAPTERS, adapterEnv, deleteFixtureKeys, FAST_RETRIES, until } from "./fixture";
import { startReceiver, type Receiver } from "../helpers/receiver";

// A real server (startTestServer) stopped with deliveries pending and started again on the same
// data directory: nothing pending is lost, nothing acknowledged is sent again.

const log = createLogger("silent");
afterAll(deleteFixtureKeys);

describe.each(ADAPTERS)("server restart (%s queue)", (adapter) => {
  let dataDir: string;
  let rx: Receiver;
  let servers: TestServer[];

  beforeEach(async () => {
    dataDir = tempDir();
    servers = [];
  });
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await rx.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("loses no pending delivery and repeats none already acknowledged", async () => {
    // A 60 s window: the failing deliveries are still pending across the restart.
    const env = { ...FAST_RETRIES, WEBHOOK_RETRY_WINDOW_MS: "60000", ...adapterEnv(adapter) };
    let streamBUp = false;
    rx = await startReceiver(({ body }) => (body.stream.name === "a" || streamBUp ? 200 : 503));

    const first = await startTestServer(env, { dataDir });
    servers.push(first);
    const api = apiClient(first.apiUrl, first.key);
    expect((await api("POST", "/webhook", { url: rx.url, sharedSecret: "k" })).status).toBe(200);
    const a = (await api("POST", "/stream", { name: "a" })).body;
    const b = (await api("POST", "/stream", { name: "b" })).body;

    // Raised through the running server's own store, as its session manager raises them.
    const events = createEventSink(first.server.store, log);
    for (let i = 1; i <= 5; i++) {
      await events.raise("stream.started", a.id, { sessionId: `a${i}` });
      await events.raise("stream.started", b.id, { sessionId: `b${i}` });
    }
    const acked = (label: string) => rx.received.filter((r) => r.body.payload.sessionId === label && r.status === 200).length;
    const tries = (label: string) => rx.received.filter((r) => r.body.payload.sessionId === label).length;
    await rx.waitFor(() => [1, 2, 3, 4, 5].every((i) => acked(`a${i}`) === 1) && tries("b1") >= 2, "a1-a5 acknowledged and b1 retried");
    await first.stop();
    servers = [];

    // While no server runs: events written by another process (they must not wait for a poll
    // of a server that is not there, nor be lost).
    const offline = await openTestStore(dataDir);
    for (let i = 6; i <= 8; i++) await createEventSink(offline, log).raise("stream.idle", a.id, { sessionId: `a${i}` });
    await offline.close();

    const ackedBeforeRestart = new Set(rx.received.filter((r) => r.status === 200).map((r) => r.body.id as string));
    const receivedBeforeRestart = rx.received.length;
    expect(ackedBeforeRestart.size).toBe(5);
    expect(rx.received.some((r) => r.body.payload.sessionId === "b2")).toBe(false);
    streamBUp = true;

    const second = await startTestServer(env, { dataDir });
    servers.push(second);
    const labels = [...[1, 2, 3, 4, 5, 6, 7, 8].map((i) => `a${i}`), ...[1, 2, 3, 4, 5].map((i) => `b${i}`)];
    await rx.waitFor(() => labels.every((l) => acked(l) === 1), "every event acknowledged");
    // Settled in the database too: no attempt is still on its way.
    const store = second.server.store;
    await until(async () => (await store.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status != 'delivered'"))!.n === 0, "all deliveries settled");

    // None lost: each of the 13 events acknowledged exactly once, with one id each.
    expect(labels.map(acked)).toEqual(labels.map(() => 1));
    expect(new Set(rx.received.filter((r) => r.status === 200).map((r) => r.body.id)).size).toBe(13);
    // None repeated: what was acknowledged before the restart never came again.
    const after = rx.received.slice(receivedBeforeRestart);
    expect(after.filter((r) => ackedBeforeRestart.has(r.body.id))).toEqual([]);
    // And stream b's events still in their order.
    expect(rx.received.filter((r) => r.body.stream.name === "b" && r.status === 200).map((r) => r.body.payload.sessionId)).toEqual(["b1", "b2", "b3", "b4", "b5"]);
    // Every POST the receiver saw is in the log, once.
    const total = (await store.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_log"))!.n;
    expect(total).toBe(rx.received.length);
  });
});
