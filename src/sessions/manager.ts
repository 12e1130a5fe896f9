import path from "node:path";
import type { LiveControl } from "./control";
import type { LiveRates } from "../shapes";
import type { SessionRecord } from "../db";
import type { IngestHandlers } from "../ingest";
import { endPlaylists } from "../media";
import { LiveSession, type EndReason, type LiveSessionDeps } from "./liveSession";

export type SessionManagerDeps = Omit<LiveSessionDeps, "ffmpegPath"> & {
  ffmpegPath: string | undefined;
  /** MAX_LIVE_STREAMS_PER_USER: concurrent publishes of one user's streams; unlimited when absent. */
  maxLiveStreamsPerUser?: number;
};

/**
 * The hub of live media (STYLE.md): ingest asks it to admit and start publishes, the API asks
 * it to interrupt them. It is the only place that starts and stops pipelines and the only
 * writer of isActive.
 */
export class SessionManager implements IngestHandlers, LiveControl {
  private readonly byStream = new Map<string, LiveSession>();
  private readonly byPublisher = new Map<string, LiveSession>();
  /** A publisher that reconnected while its previous session was still ending, by stream id. */
  private readonly successors = new Map<string, string>();
  private shuttingDown = false;

  constructor(private readonly deps: SessionManagerDeps) {}

  get liveCount(): number {
    return this.byStream.size;
  }

  admit(streamKey: string): string | undefined {
    if (this.shuttingDown) return "the server is shutting down";
    if (!this.deps.ffmpegPath) return "ffmpeg is not available on this server";
    const stream = this.deps.store.streams.getByStreamKey(streamKey);
    if (!stream) return "unknown stream key";
    if (stream.suspended) return `stream ${stream.id} is suspended`;
    // After the key: a stranger's publishes do not get to make this server write to disk.
    const storage = this.deps.storageProblem?.();
    if (storage) return `storage unavailable: ${storage}`;
    // A publisher that dropped and reconnects at once (OBS does) takes over as soon as the
    // previous session has finished; a second publisher next to a live one is refused.
    const current = this.byStream.get(stream.id);
    if ((current && current.publisherConnected) || this.successors.has(stream.id)) return `stream ${stream.id} is already live`;
    const max = this.deps.maxLiveStreamsPerUser;
    if (max !== undefined) {
      // Sessions still winding down count too: their pipelines are still running.
      let live = 0;
      for (const s of this.byStream.values()) if (s.stream.userId === stream.userId) live++;
      if (live >= max) return `user ${stream.userId} already has ${live} live streams, the limit (MAX_LIVE_STREAMS_PER_USER=${max}); stream ${stream.id} refused`;
    }
    return undefined;
  }

  onPublishStart(publisherId: string, streamKey: string): void {
    // Admitted at the publish command; its first video tag came since, and with it perhaps a
    // suspend, a delete or a second publisher: ask again.
    const refusal = this.admit(streamKey);
    const stream = refusal === undefined ? this.deps.store.streams.getByStreamKey(streamKey) : undefined;
    if (!stream) {
      this.deps.log.info({ publisherId, reason: refusal }, "publish refused");
      this.deps.disconnectPublisher(publisherId);
      return;
    }
    const previous = this.byStream.get(stream.id);
    if (!previous) return this.begin(stream.id, publisherId);
    // The reconnecting publisher waits (node-media-server holds its media) until the previous
    // session has ended its playlists and raised stream.idle: one session at a time per stream.
    this.successors.set(stream.id, publisherId);
    void previous.closed.then(() => {
      if (this.successors.get(stream.id) !== publisherId) return; // it left while waiting
      this.successors.delete(stream.id);
      this.begin(stream.id, publisherId);
    });
  }

  private begin(streamId: string, publisherId: string): void {
    const stream = this.deps.store.streams.get(streamId);
    if (!stream || stream.suspended || this.shuttingDown) {
      this.deps.disconnectPublisher(publisherId);
      return;
    }
    let live: LiveSession;
    try {
      live = new LiveSession(stream, publisherId, { ...this.deps, ffmpegPath: this.deps.ffmpegPath!, streamTakenOver: (id) => this.byStream.has(id) }, (s) => this.forget(s));
    } catch (err) {
      // The session row could not be written (a full disk): refuse rather than crash.
      this.deps.log.error({ err, streamId, publisherId }, "could not start a live session: publish refused");
      this.deps.disconnectPublisher(publisherId);
      return;
    }
    this.byStream.set(stream.id, live);
    this.byPublisher.set(publisherId, live);
    live.start();
  }

  onPublishEnd(publisherId: string, refusal?: string): void {
    for (const [streamId, waiting] of this.successors) if (waiting === publisherId) this.successors.delete(streamId);
    const live = this.byPublisher.get(publisherId);
    if (refusal) void live?.stop("media refused", refusal);
    else live?.publisherGone();
  }

  /** The stream's settings changed: observers of a live session may need to act. */
  streamChanged(streamId: string): void {
    if (!this.byStream.get(streamId)?.isLive) return;
    for (const o of this.deps.observers) o.streamChanged?.(streamId);
  }

  /** Suspend and delete end the live session at once (spec 4.1, DESIGN.md). */
  interrupt(streamId: string, reason: "suspended" | "deleted" | "terminated"): void {
    void this.byStream.get(streamId)?.stop(reason);
  }

  /** Live rates by parent stream id, or by session (= child stream) id. */
  rates(id: string): LiveRates | undefined {
    const live = this.byStream.get(id) ?? [...this.byStream.values()].find((s) => s.session.id === id);
    return live?.isLive ? live.rates() : undefined;
  }

  /** The live session of a stream, if any (tests, metrics). */
  liveSession(streamId: string): LiveSession | undefined {
    return this.byStream.get(streamId);
  }

  /**
   * At start: a previous run that died left streams marked active and sessions open. Their
   * publishers are gone with it, so close them now, end their playlists, and raise the
   * stream.idle that their stream.started is owed.
   */
  recoverAfterCrash(): SessionRecord[] {
    const { store, log, events } = this.deps;
    const open = store.sessions.listOpen();
    for (const s of open) {
      const child = store.streams.get(s.id);
      const parent = store.streams.get(s.parentId) ?? null;
      const wasLive = child?.isActive === true;
      store.sessions.end(s.id, Math.max(s.lastSeen, s.createdAt), "server stopped: the previous run ended without closing it");
      store.streams.setActive([s.parentId, s.id], false);
      if (parent?.playbackId) endPlaylists(path.join(this.deps.hlsDir, parent.playbackId));
      if (wasLive) events.raise("stream.idle", s.parentId, { sessionId: s.id });
      log.warn({ streamId: s.parentId, sessionId: s.id }, "closed a session left open by a previous run");
    }
    for (const s of store.streams.listActive()) store.streams.setActive([s.id], false);
    return open;
  }

  /** Ends every live session (publishers disconnected, playlists ended, stream.idle raised). */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    await this.endAll("shutdown");
  }

  /** Storage cannot take media any more: every live session ends, saying why. */
  async storageFailed(problem: string): Promise<void> {
    const n = this.byStream.size;
    if (n > 0) this.deps.log.error({ problem, sessions: n }, "storage unavailable: ending every live session");
    await this.endAll("storage unavailable", problem);
  }

  private async endAll(reason: EndReason, detail?: string): Promise<void> {
    await Promise.all([...this.byStream.values()].map((s) => s.stop(reason, detail)));
  }

  private forget(s: LiveSession): void {
    if (this.byStream.get(s.stream.id) === s) this.byStream.delete(s.stream.id);
    this.byPublisher.delete(s.publisherId);
  }
}
