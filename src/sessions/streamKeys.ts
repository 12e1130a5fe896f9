import { secretsEqual, sha256Hex, type Store, type StreamRecord } from "../db";
import type { Logger } from "../log";

/**
 * The streams a publish may name, by key, in memory: the RTMP ingest decides on a publish
 * synchronously, before NetStream.Publish.Start (a late refusal lets the publisher start, then
 * cuts it, and OBS goes into its reconnect loop), while the database is asynchronous. Loaded before
 * the RTMP port opens, updated as streams change (on this node at once, on others through the
 * control channel) and reloaded whole every `reloadMs` in case a notice went missing.
 */
export class StreamKeyIndex {
  private byKeyHash = new Map<string, StreamRecord>();
  private byId = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private reloading: Promise<void> | undefined;
  /** Streams re-read while a reload runs: applied over its result, which may predate them. */
  private refreshedDuringReload: Map<string, StreamRecord | undefined> | undefined;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly reloadMs = 30_000,
  ) {}

  /** Loads every publishable stream, then keeps reloading. */
  async start(): Promise<void> {
    await this.reload();
    this.timer = setInterval(() => {
      this.reload().catch((err: unknown) => this.log.warn({ err }, "could not reload the stream key index; keeping the last one"));
    }, this.reloadMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  get size(): number {
    return this.byKeyHash.size;
  }

  /** The stream a key publishes to, compared in constant time; undefined for an unknown or deleted one. */
  lookup(streamKey: string): StreamRecord | undefined {
    const s = this.byKeyHash.get(sha256Hex(streamKey));
    return s?.streamKey && secretsEqual(s.streamKey, streamKey) ? s : undefined;
  }

  /** Every publishable stream (the SRT ingest arms a listener for each). */
  all(): StreamRecord[] {
    return [...this.byKeyHash.values()];
  }

  /** Re-reads one stream (created, suspended, resumed, deleted, changed). */
  async refresh(streamId: string): Promise<void> {
    const s = await this.store.streams.get(streamId);
    this.refreshedDuringReload?.set(streamId, s);
    this.apply(streamId, s);
  }

  private apply(streamId: string, s: StreamRecord | undefined): void {
    this.forget(streamId);
    if (s && s.parentId === null && s.streamKey) this.put(s);
  }

  reload(): Promise<void> {
    if (this.reloading) return this.reloading;
    const refreshed = (this.refreshedDuringReload = new Map());
    return (this.reloading = this.store.streams
      .listPublishable()
      .then((all) => {
        const byKeyHash = new Map<string, StreamRecord>();
        const byId = new Map<string, string>();
        for (const s of all) {
          const hash = sha256Hex(s.streamKey!);
          byKeyHash.set(hash, s);
          byId.set(s.id, hash);
        }
        this.byKeyHash = byKeyHash;
        this.byId = byId;
        for (const [id, s] of refreshed) this.apply(id, s);
      })
      .finally(() => {
        this.reloading = undefined;
        this.refreshedDuringReload = undefined;
      }));
  }

  private put(s: StreamRecord): void {
    const hash = sha256Hex(s.streamKey!);
    this.byKeyHash.set(hash, s);
    this.byId.set(s.id, hash);
  }

  private forget(streamId: string): void {
    const hash = this.byId.get(streamId);
    if (hash === undefined) return;
    this.byKeyHash.delete(hash);
    this.byId.delete(streamId);
  }
}
