// How onair's processes (`npm start`, `npm run worker`) start and stop: settings checked before
// anything runs, signals handled from the first moment, a stop that cannot hang.

import { ConfigError, loadConfig, type Config } from "./config";
import type { Logger } from "./log";

/** Supervisors send SIGKILL 10 s after SIGTERM: a stop that hangs is cut short before that. */
export const SHUTDOWN_DEADLINE_MS = 9000;

/** The settings, or every problem with them on stderr and exit code 2. `check` adds a program's own. */
export function configOrExit(program: string, check: (config: Config) => string[] = () => []): Config {
  try {
    const config = loadConfig();
    const problems = check(config);
    if (problems.length) throw new ConfigError(problems);
    return config;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${program}: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

export interface Lifecycle<T> {
  start(): Promise<T>;
  /** `clean: false` (a part failed or overran its bound, already logged) makes the exit code 1. */
  stop(running: T): Promise<void | { clean: boolean }>;
  /**
   * Last measures before exiting 1 (e.g. kill the children): the stop took longer than
   * SHUTDOWN_DEADLINE_MS, or an error escaped every handler.
   */
  onDeadline?(running: T): void;
  /** Logged when a signal starts the stop. */
  stopping: string;
}

/**
 * Starts, then stops on the first SIGINT or SIGTERM (one that comes while starting is honoured
 * once started) and exits: 0 when the stop went well, 1 when it failed, said it was not clean,
 * or overran its deadline.
 * Resolves with what was started, or undefined when a signal came first.
 */
export async function runUntilSignal<T>(log: Logger, l: Lifecycle<T>): Promise<T | undefined> {
  let running: T | undefined;
  let signalled: string | undefined;
  const stop = (what: T, signal: string) => {
    log.info({ signal }, l.stopping);
    setTimeout(() => {
      log.error(`stopping took over ${SHUTDOWN_DEADLINE_MS / 1000} s: exiting`);
      l.onDeadline?.(what);
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    l.stop(what).then(
      (result) => {
        if (result && !result.clean) {
          log.error("stopped, but not cleanly: exiting 1");
          process.exit(1);
        }
        log.info("stopped");
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, "error while shutting down");
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: string) => {
    if (signalled) return;
    signalled = signal;
    if (running !== undefined) stop(running, signal);
  };
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  // The last resort: every stream's own errors are caught where they happen (one stream's
  // failure ends that stream), so an error that gets here means the process's state is not
  // to be trusted. Say what it was, leave no child behind, and exit for the supervisor to
  // restart us (the next start's recovery closes what was left open).
  const fatal = (err: unknown, kind: string) => {
    try {
      log.fatal({ err, kind }, "uncaught error: exiting");
      if (running !== undefined) l.onDeadline?.(running);
    } finally {
      process.exit(1);
    }
  };
  process.on("uncaughtException", (err) => fatal(err, "uncaughtException"));
  process.on("unhandledRejection", (err) => fatal(err, "unhandledRejection"));

  running = await l.start();
  if (signalled) {
    stop(running, signalled);
    return undefined;
  }
  return running;
}

/** Runs a program's main; a failure to start is one line on stderr and exit code 1. */
export function runMain(program: string, main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`${program}: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
