import type { Logger } from "../../log";
import { LISTENER_SCHEDULE, RestartLoop, spawnSupervised, type InputScripts, type ProcessRegistry, type RestartMetrics, type SupervisedProcess } from "../../media";
import { buildSrtBridgeArgs, SRT_INPUT_BEFORE, srtListenerInput } from "../bridgeArgs";
import type { BridgeTickets } from "../bridges";

/** What the SRT ingest reads of a stream. */
export interface SrtStream {
  id: string;
  streamKey: string | null;
  suspended: boolean;
  srtPort: number | null;
  srtPassphrase: string | null;
  /** When the owner last asked for the srtUrl or a caller last published through it (ms). */
  srtUsedAt?: number | null;
  /** A pulled stream takes no SRT. */
  pull: unknown;
}

export interface SrtIngestDeps {
  /** The publishable streams (the key index, kept current by notices and reloads). */
  streams(): SrtStream[];
  /** A caller published through a stream's listener at `at`: noted in the store, so every node and the next start keep it armed. */
  used(streamId: string, at: number): Promise<void>;
  tickets: BridgeTickets;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
  /** Where each run's input goes (the passphrase stays out of argv). */
  inputScripts: Pick<InputScripts, "write">;
  /** The address the listeners bind (HOST). */
  bindHost: string;
  latencyMs: number;
  /** A listener without a caller or a read of its stream for this long is stopped (SRT_LISTENER_IDLE_SECONDS). */
  idleMs: number;
  rtmpUrl(ticket: string): string;
  log: Logger;
  metrics?: RestartMetrics;
  /** How often the listeners are compared with the streams, ms. */
  reconcileMs?: number;
}

/**
 * Whether a stream's listener is wanted now (pure): it has a port and passphrase, may publish,
 * is not pulled, and its port was asked for or used within `idleMs` (`usedHereAt`: what this
 * node saw and the store may not show yet).
 */
export function listenerWanted(s: SrtStream, now: number, idleMs: number, usedHereAt = 0): boolean {
  if (s.suspended || !s.streamKey || s.pull || s.srtPort === null || s.srtPassphrase === null) return false;
  return now - Math.max(s.srtUsedAt ?? 0, usedHereAt) < idleMs;
}

interface Listener {
  stream: SrtStream;
  process: SupervisedProcess | undefined;
  /** The current run's ticket: spent once its caller publishes. */
  ticket: string | undefined;
  /** A caller published through the current run. */
  called: boolean;
  /** When this node last saw a caller on it. */
  usedAt: number;
  restarts: RestartLoop;
}

/**
 * SRT ingest: one ffmpeg listener per stream that wants one, on the stream's own UDP port, in
 * caller mode from the broadcaster's side. Ports are given when the owner asks for the srtUrl
 * (api/routes/streamSrt.ts); a listener is armed while its port was asked for or used within
 * SRT_LISTENER_IDLE_SECONDS, and stays armed while a caller publishes. The handshake checks the
 * stream's passphrase (ffmpeg cannot route by streamid, so a port is a stream); an accepted
 * caller's MPEG-TS is copied into the local RTMP server under a ticket, and from there it is a
 * session like any other. A listener serves one caller and exits when it leaves: it is armed
 * again through its RestartLoop (LISTENER_SCHEDULE: at once, backing off if it keeps exiting
 * without a caller, as on a port taken by another process).
 */
export class SrtIngest {
  private readonly listeners = new Map<string, Listener>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly deps: SrtIngestDeps) {}

  start(): void {
    this.reconcile();
    this.timer = setInterval(() => this.reconcile(), this.deps.reconcileMs ?? 2000);
    this.timer.unref();
  }

  /** The ports listening now, by stream id (metrics, tests). */
  get armed(): Map<string, number> {
    return new Map([...this.listeners].filter(([, l]) => l.process?.running).map(([id, l]) => [id, l.stream.srtPort!]));
  }

  /** Arms the listeners streams want and stops those no longer wanted. */
  reconcile(now = Date.now()): void {
    if (this.closed) return;
    const { idleMs } = this.deps;
    const streams = new Map(this.deps.streams().map((s) => [s.id, s]));
    for (const [id, l] of this.listeners) {
      this.noteCaller(l, now);
      const s = streams.get(id);
      const busy = l.called && l.process?.running === true;
      if (!s || s.srtPort !== l.stream.srtPort || s.srtPassphrase !== l.stream.srtPassphrase || s.streamKey !== l.stream.streamKey) this.disarm(id);
      else if (!busy && !listenerWanted(s, now, idleMs, l.usedAt)) {
        this.deps.log.info({ streamId: id, srtPort: l.stream.srtPort, idleMs }, s.suspended || s.pull ? "SRT listener stopped: the stream is suspended or pulled" : "SRT listener stopped: idle (armed again when its owner reads the stream)");
        this.disarm(id);
      } else l.stream = s;
    }
    for (const s of streams.values()) if (!this.listeners.has(s.id) && listenerWanted(s, now, idleMs)) this.arm(s);
  }

  /** A spent ticket on a running listener: its caller publishes. Noted once per run, kept fresh while it lasts. */
  private noteCaller(l: Listener, now: number): void {
    if (!l.process?.running || l.ticket === undefined) return;
    if (!l.called && !this.deps.tickets.isOpen(l.ticket)) {
      l.called = true;
      l.restarts.recovered();
      this.persistUse(l.stream.id, now);
    }
    if (l.called) l.usedAt = now;
  }

  private persistUse(streamId: string, at: number): void {
    this.deps.used(streamId, at).catch((err: unknown) => this.deps.log.warn({ err, streamId }, "could not note the SRT listener's use; it may be stopped early on another node"));
  }

  private arm(stream: SrtStream): void {
    const restarts = new RestartLoop({ kind: "srt_listener", what: "SRT listener", schedule: LISTENER_SCHEDULE, log: this.deps.log.child({ streamId: stream.id, srtPort: stream.srtPort }), ...(this.deps.metrics ? { metrics: this.deps.metrics } : {}) });
    const listener: Listener = { stream, process: undefined, ticket: undefined, called: false, usedAt: 0, restarts };
    this.listeners.set(stream.id, listener);
    void this.run(listener);
  }

  private current(l: Listener): boolean {
    return !this.closed && this.listeners.get(l.stream.id) === l;
  }

  private async run(l: Listener): Promise<void> {
    const { deps } = this;
    if (!this.current(l) || !deps.ffmpegPath) return;
    const { stream } = l;
    const log = deps.log.child({ streamId: stream.id, srtPort: stream.srtPort });
    const ticket = deps.tickets.issue({ streamKey: stream.streamKey!, protocol: "srt" });
    let script: Awaited<ReturnType<InputScripts["write"]>>;
    try {
      script = await deps.inputScripts.write(srtListenerInput({ host: deps.bindHost, port: stream.srtPort!, passphrase: stream.srtPassphrase!, latencyMs: deps.latencyMs }), SRT_INPUT_BEFORE);
    } catch (err) {
      deps.tickets.revoke(ticket);
      if (this.current(l)) l.restarts.failed("could not be armed", () => void this.run(l), { fields: { err } });
      return;
    }
    if (!this.current(l)) {
      deps.tickets.revoke(ticket);
      await script.remove();
      return;
    }
    const started = Date.now();
    l.ticket = ticket;
    l.called = false;
    // No secret in this argv: the passphrase is in the script, the stream key behind the ticket.
    l.process = spawnSupervised(deps.registry, {
      command: deps.ffmpegPath,
      args: buildSrtBridgeArgs({ input: script.args, outputUrl: deps.rtmpUrl(ticket) }),
      log,
      name: "srt listener",
      secrets: [stream.srtPassphrase!],
    });
    // The ticket (in this argv) admits a connection of this process only.
    deps.tickets.bind(ticket, l.process.pid);
    void l.process.ended.then((end) => {
      const called = l.called || !deps.tickets.isOpen(ticket);
      deps.tickets.revoke(ticket);
      void script.remove().catch(() => undefined);
      if (!this.current(l) || end.requested) return;
      const ranForMs = Date.now() - started;
      const next = () => void this.run(l);
      if (called) {
        // Its caller came and left: armed again at once for the next call.
        l.usedAt = Date.now();
        this.persistUse(stream.id, l.usedAt);
        l.restarts.recovered();
        l.restarts.failed("ended with its caller", next, { expected: true, ranForMs });
      } else {
        l.restarts.failed("exited without a caller (port taken?)", next, { ranForMs, fields: { code: end.code, stderrTail: end.stderrTail.slice(-3) } });
      }
    });
  }

  private disarm(streamId: string): void {
    const l = this.listeners.get(streamId);
    if (!l) return;
    this.listeners.delete(streamId);
    l.restarts.cancel();
    void l.process?.stop(2000);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    const running = [...this.listeners.values()].map((l) => l.process);
    for (const id of [...this.listeners.keys()]) this.disarm(id);
    await Promise.all(running.map((p) => p?.ended));
  }
}
