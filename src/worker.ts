// `npm run worker`: webhook delivery workers on their own, against Redis, so that the API and
// the workers scale apart. A worker needs the same DATA_DIR as the API (it reads webhooks and
// events and writes the delivery log in the same SQLite database), so it runs on the same host
// or volume; the API can then set WEBHOOK_CONCURRENCY=0 and leave delivery to the workers.

import { ConfigError, loadConfig, type Config } from "./config";
import { openStore } from "./db";
import { startEvents } from "./events";
import { createLogger } from "./log";

function configOrExit(): Config {
  try {
    const config = loadConfig();
    const problems: string[] = [];
    if (!config.redisUrl) problems.push("REDIS_URL is required: workers take their jobs from BullMQ on Redis (the embedded queue runs inside `npm start`)");
    if (config.webhooks.concurrency < 1) problems.push("WEBHOOK_CONCURRENCY must be at least 1 for a worker");
    if (problems.length) throw new ConfigError(problems);
    return config;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`onair worker: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

async function main(): Promise<void> {
  const config = configOrExit();
  const log = createLogger(config.logLevel);
  const store = openStore(config.dbPath);
  const running = await startEvents(config, store, log).catch((err: unknown) => {
    store.close();
    throw err;
  });
  log.info({ dataDir: config.dataDir }, "onair worker is running");

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "worker shutting down: finishing the deliveries in flight");
    running.stop().then(
      () => {
        store.close();
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, "error while shutting down");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
}

main().catch((err: unknown) => {
  process.stderr.write(`onair worker: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
