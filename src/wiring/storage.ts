import fs from "node:fs";
import path from "node:path";
import { databaseLocation } from "../config";
import { logCheckpoints, openStore, type Store } from "../db";
import { lockDataDir } from "../instanceLock";
import { RecordingUrlSigner } from "../recordings";
import type { Wiring } from "./context";

/** Where the first start keeps the first API key, readable by the operator only (0600). */
export const FIRST_KEY_FILE = "first-api-key";

export interface StorageArea {
  store: Store;
  /** Set when this start created the first user (empty data directory). */
  firstUser?: { name: string; apiKey: string };
  recordingSigner: RecordingUrlSigner;
  signRecording(sessionId: string): string;
}

/** The data directory (one onair at a time) and the database; the first user on an empty one. */
export async function wireStorage({ config, log, stops }: Wiring): Promise<StorageArea> {
  const lock = lockDataDir(config.dataDir);
  let store: Store | undefined;
  // The lock outlives the database: no other onair opens it while this one still writes.
  stops.register("stores", "database", async () => {
    try {
      await store?.close();
    } finally {
      lock.release();
    }
  });
  store = await openStore(databaseLocation(config), { checkpointInBackground: (p) => logCheckpoints(log, p) });

  let firstUser: StorageArea["firstUser"];
  if ((await store.users.count()) === 0) {
    const user = await store.users.getOrCreate("admin");
    firstUser = { name: user.name, apiKey: await store.apiKeys.create(user.id) };
    // Also kept where only the operator can read it: the banner scrolls away, a log collector
    // keeps it for anyone who reads logs. Never written to the log itself.
    const keyFile = path.join(config.dataDir, FIRST_KEY_FILE);
    fs.writeFileSync(keyFile, firstUser.apiKey + "\n", { mode: 0o600 });
    log.info({ userId: user.id, keyFile }, "empty data directory: created the first user and API key");
  }

  // Recording URLs are signed with a secret of this data directory (made at the first start),
  // or of the database that several nodes share.
  const recordingSigner = store.db.dialect === "postgres" ? await RecordingUrlSigner.shared(store.db) : RecordingUrlSigner.open(config.dataDir);
  return { store, firstUser, recordingSigner, signRecording: (sessionId) => recordingSigner.sign(sessionId) };
}
