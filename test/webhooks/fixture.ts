import { dropTestDatabase, openTestStore } from "../helpers/database";
import fs from "node:fs";
import path from "node:path";
import { loadConfig } from "../../src/config";
import { openStore, type Store, type StreamRecord, type WebhookFields, type WebhookRecord } from "../../src/db";
import { startEvents, type EventSink, type RunningEvents } from "../../src/events";
import { createLogger } from "../../src/log";
import type { QueueTuning } from "../../src/queue";
import { LOOPBACK_DESTINATIONS, tempDir } from "../helpers/server";
import { deleteKeys, REDIS_URL, uniquePrefix } from "../queue/redis";

export type AdapterName = "embedded" | "bullmq";
export const ADAPTERS: AdapterName[] = ["embedded", "bullmq"];

/** Spec 8's schedule compressed 100×: first retry after 50 ms, doubling; 10 s window. */
export const FAST_RETRIES = { WEBHOOK_RETRY_FIRST_MS: "50", WEBHOOK_RETRY_WINDOW_MS: "10000" };

const prefixes: string[] = [];

/** The environment that selects an adapter; BullMQ gets a key prefix of its own each time. */
export function adapterEnv(adapter: AdapterName): Record<string, string> {
  if (adapter === "embedded") return {};
  const prefix = uniquePrefix("webhooks");
  prefixes.push(prefix);
  return { REDIS_URL, REDIS_PREFIX: prefix };
}

/** Every Redis key the file's fixtures made: call from afterAll. */
export async function deleteFixtureKeys(): Promise<void> {
  await Promise.all(prefixes.splice(0).map((p) => deleteKeys(p)));
}

/** Events → webhooks as the server wires them, on a store of its own, without the HTTP API. */
export interface Delivery {
  store: Store;
  events: EventSink;
  running: RunningEvents;
  userId: string;
  stream(name?: string): Promise<StreamRecord>;
  webhook(url: string, fields?: Partial<WebhookFields>, userId?: string): Promise<WebhookRecord>;
  stop(): Promise<void>;
}

export async function startDelivery(adapter: AdapterName, env: Record<string, string> = {}, tuning: Partial<QueueTuning> = {}): Promise<Delivery> {
  const dir = tempDir();
  const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: "silent", ...FAST_RETRIES, ...LOOPBACK_DESTINATIONS, ...adapterEnv(adapter), ...env });
  // On PostgreSQL when TEST_DATABASE_URL is set.
  const store = await openTestStore(dir);
  const userId = (await store.users.getOrCreate("alice")).id;
  // No jitter: the schedule is exact, so a test can tell it from scheduling noise (the jitter
  // itself is unit-tested with the schedule).
  const running = await startEvents(config, store, createLogger("silent"), { tuning, random: () => 0.5 });
  return {
    store,
    events: running.events,
    running,
    userId,
    stream: (name = "cam") => store.streams.create({ userId, name, profiles: [], record: false, playbackPolicy: null }),
    webhook: (url, fields = {}, owner = userId) =>
      store.webhooks.create(owner, { name: "hook", url, events: ["stream.started", "stream.idle"], sharedSecret: null, streamId: null, ...fields }),
    stop: async () => {
      await running.stop();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
      await dropTestDatabase(dir);
    },
  };
}

/** Until `done()` holds, checked on every turn of the event loop (for conditions in the database). */
export async function until(done: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}
