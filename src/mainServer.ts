import { configOrExit, runMain, runUntilSignal } from "./lifecycle";
import { createLogger } from "./log";
import { banner, startServer } from "./server";

runMain("onair", async () => {
  const config = configOrExit("onair");
  const log = createLogger(config.logLevel);
  const server = await runUntilSignal(log, {
    start: () => startServer(config, log),
    stop: (s) => s.stop(),
    // Without leaving an ffmpeg behind (the next start's recovery closes what it left open).
    onDeadline: (s) => {
      for (const pid of s.processes.pids()) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    },
    stopping: "shutting down",
  });
  if (server) process.stdout.write(banner(server, config.dataDir) + "\n");
});
