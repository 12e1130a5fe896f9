import type { Logger } from "../log";

/**
 * Runs a housekeeping sweep now and then every `everyMs` (an hour) until stopped. A sweep that
 * fails (a busy or full disk) is logged and tried at the next tick.
 */
export function startSweeping(what: string, sweep: () => void, log: Logger, everyMs = 3600_000): () => void {
  const run = () => {
    try {
      sweep();
    } catch (err) {
      log.error({ err }, `${what} failed`);
    }
  };
  run();
  const timer = setInterval(run, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
