import type { Logger } from "../log";

/**
 * Runs a housekeeping sweep now and then every `everyMs` (an hour) until stopped. A sweep that
 * fails (a busy or full disk) is logged and tried at the next tick.
 */
export function startSweeping(what: string, sweep: () => unknown, log: Logger, everyMs = 3600_000): () => void {
  let running = false;
  const run = async () => {
    // A slow sweep is not started twice.
    if (running) return;
    running = true;
    try {
      await sweep();
    } catch (err) {
      log.error({ err }, `${what} failed`);
    } finally {
      running = false;
    }
  };
  void run();
  const timer = setInterval(() => void run(), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
