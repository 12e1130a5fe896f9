import type { Logger } from "../../log";
import { spawnSupervised, type ProcessRegistry, type SupervisedProcess } from "../../media";
import { buildSrtBridgeArgs } from "../bridgeArgs";
import type { BridgeTickets } from "../bridges";

/** What the SRT ingest reads of a stream. */
export interface SrtStream {
  id: string;
  streamKey: string | null;
  suspended: boolean;
  srtPort: number | null;
  srtPassphrase: string | null;
}

export interface SrtIngestDeps {
  /** The publishable streams (the key index, kept current by notices and reloads). */
  streams(): SrtStream[];
  /** Gives a stream without one an SRT port (streams from before SRT_PORTS was set). */
  assignPort(streamId: string): Promise<void>;
  tickets: BridgeTickets;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
  /** The address the listeners bind (HOST). */
  bindHost: string;
  latencyMs: number;
  rtmpUrl(ticket: string): string;
  log: Logger;
  /** How often the listeners are compared with the streams, ms. */
  reconcileMs?: number;
}

interface Listener {
  stream: SrtStream;
  process: SupervisedProcess | undefined;
  /** Consecutive runs that ended within a few seconds: the re-arm backs off. */
  quickExits: number;
  timer: NodeJS.Timeout | undefined;
}

/** Re-armed this long after a caller leaves: OBS's reconnect comes after 2 s. */
const REARM_MS = 200;
const MAX_REARM_MS = 10_000;

/**
 * SRT ingest: one ffmpeg listener per stream, on the stream's own UDP port, in caller mode from
 * the broadcaster's side. The handshake checks the stream's passphrase (ffmpeg cannot route by
 * streamid, so a port is a stream); an accepted caller's MPEG-TS is copied into the local RTMP
 * server under a ticket, and from there it is a session like any other. A listener serves one
 * caller and exits when it leaves: it is armed again at once. Suspended and deleted streams'
 * listeners are stopped.
 */
export class SrtIngest {
  private readonly listeners = new Map<string, Listener>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private assigning = false;

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

  /** Arms the listeners streams need and stops those no longer wanted. */
  reconcile(): void {
    if (this.closed) return;
    const wanted = new Map<string, SrtStream>();
    const unassigned: string[] = [];
    for (const s of this.deps.streams()) {
      if (s.suspended || !s.streamKey) continue;
      if (s.srtPort === null || s.srtPassphrase === null) unassigned.push(s.id);
      else wanted.set(s.id, s);
    }
    for (const [id, l] of this.listeners) {
      const w = wanted.get(id);
      if (!w || w.srtPort !== l.stream.srtPort || w.srtPassphrase !== l.stream.srtPassphrase || w.streamKey !== l.stream.streamKey) this.disarm(id);
    }
    for (const [id, s] of wanted) if (!this.listeners.has(id)) this.arm(s);
    if (unassigned.length > 0 && !this.assigning) void this.assign(unassigned);
  }

  private async assign(ids: string[]): Promise<void> {
    this.assigning = true;
    try {
      for (const id of ids) await this.deps.assignPort(id);
    } catch (err) {
      this.deps.log.warn({ err }, "could not give streams SRT ports; trying again shortly");
    } finally {
      this.assigning = false;
    }
  }

  private arm(stream: SrtStream): void {
    const listener: Listener = { stream, process: undefined, quickExits: 0, timer: undefined };
    this.listeners.set(stream.id, listener);
    this.run(listener);
  }

  private run(l: Listener): void {
    const { deps } = this;
    if (this.closed || this.listeners.get(l.stream.id) !== l || !deps.ffmpegPath) return;
    const { stream } = l;
    const ticket = deps.tickets.issue({ streamKey: stream.streamKey!, protocol: "srt" });
    const log = deps.log.child({ streamId: stream.id, srtPort: stream.srtPort });
    const started = Date.now();
    // The passphrase is in this argv (ffmpeg takes it in the URL only); the stream key is not.
    l.process = spawnSupervised(deps.registry, {
      command: deps.ffmpegPath,
      args: buildSrtBridgeArgs({ host: deps.bindHost, port: stream.srtPort!, passphrase: stream.srtPassphrase!, latencyMs: deps.latencyMs, outputUrl: deps.rtmpUrl(ticket) }),
      log,
      name: "srt listener",
      secrets: [stream.srtPassphrase!],
    });
    void l.process.ended.then((end) => {
      deps.tickets.revoke(ticket);
      if (this.closed || this.listeners.get(stream.id) !== l || end.requested) return;
      l.quickExits = Date.now() - started < 3000 ? l.quickExits + 1 : 0;
      const delay = Math.min(MAX_REARM_MS, REARM_MS * 2 ** l.quickExits);
      if (l.quickExits >= 3) log.warn({ stderrTail: end.stderrTail.slice(-3), retryInMs: delay }, "the SRT listener keeps exiting at once (port taken?)");
      l.timer = setTimeout(() => this.run(l), delay);
    });
  }

  private disarm(streamId: string): void {
    const l = this.listeners.get(streamId);
    if (!l) return;
    this.listeners.delete(streamId);
    clearTimeout(l.timer);
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
