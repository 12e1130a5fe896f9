// `npm run worker`: webhook delivery workers on their own, against Redis, so that the API and
// the workers scale apart. A worker needs the same DATA_DIR as the API (it reads webhooks and
// events and writes the delivery log in the same SQLite database), so it runs on the same host
// or volume; the API can then set WEBHOOK_CONCURRENCY=0 and leave delivery to the workers.

import { logCheckpoints, openStore } from "./db";
import { startEvents } from "./events";
import { configOrExit, runMain, runUntilSignal } from "./lifecycle";
import { databaseLocation } from "./config";
import { createLogger } from "./log";
import { Shutdown } from "./shutdown";

runMain("onair worker", async () => {
  const config = configOrExit("onair worker", (c) => [
    ...(c.redisUrl ? [] : ["REDIS_URL is required: workers take their jobs from BullMQ on Redis (the embedded queue runs inside `npm start`)"]),
    ...(c.webhooks.concurrency < 1 ? ["WEBHOOK_CONCURRENCY must be at least 1 for a worker"] : []),
  ]);
  const log = createLogger(config.logLevel);
  const started = await runUntilSignal(log, {
    // The server's shutdown, with the worker's two parts: a start that fails half-way stops what it started.
    start: async () => {
      const shutdown = new Shutdown(log);
      try {
        const store = await openStore(databaseLocation(config), { checkpointInBackground: (p) => logCheckpoints(log, p) });
        shutdown.register("stores", "database", () => store.close());
        const events = await startEvents(config, store, log);
        shutdown.register("drain", "webhook deliveries", () => events.stop());
        return shutdown;
      } catch (err) {
        await shutdown.run();
        throw err;
      }
    },
    stop: (shutdown) => shutdown.run(),
    stopping: "worker shutting down: finishing the deliveries in flight",
  });
  if (started) log.info({ dataDir: config.dataDir }, "onair worker is running");
});
