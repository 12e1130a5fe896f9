// A process run the way src/main.ts runs the server (runUntilSignal) whose stop is a real
// Shutdown with made-up components, one of which never stops: test/unit/shutdown.test.ts sends it
// SIGTERM and reads its exit code and log.
import { runUntilSignal } from "../../src/lifecycle";
import { createLogger } from "../../src/log";
import { Shutdown } from "../../src/shutdown";

const log = createLogger("info");
const phases = [
  { name: "intake", title: "stop taking new work", boundMs: 200 },
  { name: "sessions", title: "end live sessions", boundMs: 300 },
  { name: "stores", title: "close stores", boundMs: 200 },
] as const;

void runUntilSignal(log, {
  start: async () => {
    const shutdown = new Shutdown(log, phases);
    // Alive until stopped, as a listening server is.
    const listener = setInterval(() => undefined, 60_000);
    shutdown.register("intake", "listener", () => clearInterval(listener));
    shutdown.register("sessions", "stuck session", () => new Promise(() => undefined));
    shutdown.register("stores", "database", () => process.stdout.write("database closed\n"));
    return shutdown;
  },
  stop: (shutdown) => shutdown.run(),
  stopping: "shutting down",
}).then(() => process.stdout.write("ready\n"));
