import { dropTestDatabase, openTestStore } from "../helpers/database";
import fs from "node:fs";
import path from "node:path";
import { loadConfig } from "../../src/config";
import { openStore } from "../../src/db";
import { startEvents } from "../../src/events";
import { createLogger } from "../../src/log";
import { tempDir } from "../helpers/server";

// What only the BullMQ adapter has: a Redis server to reach.

it("refuses to start, naming the server (not its password), when Redis cannot be reached", async () => {
  const dir = tempDir();
  const config = loadConfig({ DATA_DIR: dir, REDIS_URL: "redis://:hunter2@127.0.0.1:1" });
  const store = await openTestStore(dir);
  const t0 = performance.now();
  try {
    const attempt = startEvents(config, store, createLogger("silent"));
    await expect(attempt).rejects.toThrow(/cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1/);
    await expect(attempt).rejects.not.toThrow(/hunter2/);
    // Within the 5 s connect timeout, not hanging on ioredis's endless reconnects.
    expect(performance.now() - t0).toBeLessThan(6_000);
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
    await dropTestDatabase(dir);
  }
});
