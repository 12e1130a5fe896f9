import { ConfigError, loadConfig } from "./config";
import { createLogger } from "./log";
import { banner, startServer } from "./server";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`onair: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  const server = await startServer(config, log);
  process.stdout.write(banner(server, config.dataDir) + "\n");

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    server.stop().then(
      () => {
        log.info("stopped");
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
  process.stderr.write(`onair: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
