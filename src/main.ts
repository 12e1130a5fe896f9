import { ConfigError, loadConfig } from "./config";
import { createLogger } from "./log";
import { banner, startServer, type RunningServer } from "./server";

/** A stop that takes longer than this is cut short. */
const SHUTDOWN_DEADLINE_MS = 9000;

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

  // Signals are handled from the first moment: a supervisor may stop us while we start.
  let server: RunningServer | undefined;
  let stopping: string | undefined;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = signal;
    if (server) void stop(server, signal);
  };
  const stop = (running: RunningServer, signal: string) => {
    log.info({ signal }, "shutting down");
    // Supervisors send SIGKILL 10 s after SIGTERM: a stop that hangs ends here first, without
    // leaving an ffmpeg behind (the next start's recovery closes what it left open).
    setTimeout(() => {
      const pids = running.processes.pids();
      log.error({ pids }, "shutdown took over 9 s: killing ffmpeg and exiting");
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    return running.stop().then(
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

  server = await startServer(config, log);
  if (stopping) return void stop(server, stopping);
  process.stdout.write(banner(server, config.dataDir) + "\n");
}

main().catch((err: unknown) => {
  process.stderr.write(`onair: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
