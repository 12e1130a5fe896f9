// How the server stops: every component registers its stop as it starts, in one of a few
// phases; the stop runs the phases in the order below, each bounded. The same list undoes a
// start that failed half-way. After MediaMTX's closeResources and Outline's ShutdownHelper.

import type { Logger } from "./log";

/**
 * The phases, in the order they run. The order between components is said here and only here:
 * within a phase, the stops run side by side, so a component that must stop after another
 * belongs to a later phase. Each bound is above the graces its components give themselves
 * (a pipeline's 2 s, HTTP's and webhook deliveries' 3 s): it is reached only by a stop that
 * hangs. The whole stop stays under SHUTDOWN_DEADLINE_MS (src/lifecycle.ts) unless several
 * phases hang at once; then that deadline ends the process, as before.
 */
export const SHUTDOWN_PHASES = [
  // Queue workers take no further job (a running finalize or clip is stopped, its job released
  // to run again after the restart); the WebRTC, SRT and pull bridges close (their publishes end).
  { name: "intake", title: "stop taking new work", boundMs: 3_000 },
  // Publishers disconnected, playlists ended, isActive false and stream.idle raised while the
  // event sink still takes events; recordings handed to finalize.
  { name: "sessions", title: "end live sessions", boundMs: 5_000 },
  // What the sessions left: the RTMP server, any ffmpeg still draining (a multistream push),
  // the last viewer counts.
  { name: "release", title: "release what the sessions held", boundMs: 3_000 },
  // This node's streams' leases given back, only once its ffmpeg are gone: another node may
  // take a reconnecting publisher at once, and must not push to a destination this one still does.
  { name: "handover", title: "give back this node's streams", boundMs: 2_000 },
  // HTTP listeners and webhook deliveries side by side, each with its own 3 s grace; the
  // sweeps and watches stop.
  { name: "drain", title: "drain queues and connections", boundMs: 4_000 },
  // Connections to Redis and the database closed, the data directory's lock released.
  { name: "stores", title: "close stores", boundMs: 2_000 },
] as const satisfies readonly { name: string; title: string; boundMs: number }[];

export type ShutdownPhase = (typeof SHUTDOWN_PHASES)[number]["name"];

export interface ShutdownResult {
  /** Every stop finished within its phase's bound without an error. */
  clean: boolean;
  /** One line per stop that failed or was still running when its phase's bound passed. */
  problems: string[];
}

/** Where the wiring says how each component stops. */
export interface StopRegistrar {
  /** `name` says which component in the log when its stop fails or hangs. */
  register(phase: ShutdownPhase, name: string, stop: () => unknown): void;
}

interface Registered {
  name: string;
  stop: () => unknown;
}

export class Shutdown implements StopRegistrar {
  private readonly stops = new Map<ShutdownPhase, Registered[]>();
  private ran: Promise<ShutdownResult> | undefined;

  constructor(
    private readonly log: Logger,
    private readonly phases: readonly { name: ShutdownPhase; title: string; boundMs: number }[] = SHUTDOWN_PHASES,
  ) {}

  register(phase: ShutdownPhase, name: string, stop: () => unknown): void {
    if (this.ran) throw new Error(`shutdown: ${name} registered after the stop began`);
    const list = this.stops.get(phase) ?? [];
    list.push({ name, stop });
    this.stops.set(phase, list);
  }

  /** Runs once: a second call answers with the first's result. */
  run(): Promise<ShutdownResult> {
    return (this.ran ??= this.runPhases());
  }

  private async runPhases(): Promise<ShutdownResult> {
    const problems: string[] = [];
    for (const phase of this.phases) {
      // Started in reverse registration order: the last started is the first told to stop.
      const stops = [...(this.stops.get(phase.name) ?? [])].reverse();
      if (stops.length > 0) problems.push(...(await this.runPhase(phase, stops)));
    }
    return { clean: problems.length === 0, problems };
  }

  private async runPhase(phase: { title: string; boundMs: number }, stops: Registered[]): Promise<string[]> {
    const problems: string[] = [];
    const pending = new Set(stops);
    const done = Promise.all(
      stops.map(async (registered) => {
        const { name, stop } = registered;
        try {
          await stop();
        } catch (err) {
          const problem = `shutdown: phase '${phase.title}': ${name} failed: ${err instanceof Error ? err.message : String(err)}`;
          this.log.error({ err, component: name }, problem);
          problems.push(problem);
        } finally {
          pending.delete(registered);
        }
      }),
    );
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), phase.boundMs)));
    const overran = await Promise.race([done.then(() => false), timedOut]);
    clearTimeout(timer);
    if (overran) {
      // Left running: the process exits soon, and the next phases must still have their turn.
      const names = [...pending].map((s) => s.name);
      const problem = `shutdown: phase '${phase.title}' timed out after ${phase.boundMs / 1000} s waiting for ${names.join(", ")}`;
      this.log.error({ components: names }, problem);
      problems.push(problem);
    }
    return problems;
  }
}
