import os from "node:os";
import path from "node:path";
import type { LiveControl } from "./control";
import type { LiveRates } from "../shapes";
import type { SessionRecord } from "../db";
import { badName, rejected, type Admission, type IngestHandlers, type Refusal } from "../ingest";
import { endPlaylists } from "../media";
import { PipelineBreaker } from "./breaker";
import { defaultTranscodeBudget, ladderCost, refuseForCapacity } from "./capacity";
import type { Health } from "./health";
import { StreamRuntime, type EndReason, type StreamRuntimeDeps } from "./streamRuntime";

export type SessionManagerDeps = Omit<StreamRuntimeDeps, "ffmpegPath"> & {
  ffmpegPath: string | undefined;
  /** MAX_LIVE_STREAMS_PER_USER: concurrent publishes of one user's streams; unlimited when absent. */
  maxLiveStreamsPerUser?: number;
  /** TRANSCODE_BUDGET: output megapixels per second this node encodes at most; a default from the core count. */
  transcodeBudget?: number;
};

/**
 * The hub of live media (STYLE.md): one StreamRuntime per live stream. The ingest asks it to
 * admit publishes and hands it publishers; the API asks it to interrupt streams. It is the only
 * place that starts and stops sessions and the only writer of isActive (through the runtimes).
 */
export class SessionManager implements IngestHandlers, LiveControl {
  private readonly byStream = new Map<string, StreamRuntime>();
  private readonly byPublisher = new Map<string, StreamRuntime>();
  /** A publisher waiting for its stream's previous session to finish ending, by stream id. */
  private readonly successors = new Map<string, string>();
  private readonly breaker = new PipelineBreaker();
  private readonly budget: number;
  private shuttingDown = false;

  constructor(private readonly deps: SessionManagerDeps) {
    this.budget = deps.transcodeBudget ?? defaultTranscodeBudget(os.availableParallelism?.() ?? os.cpus().length);
  }

  get liveCount(): number {
    return this.byStream.size;
  }

  admit(streamKey: string): Admission {
    const refusal = this.refusal(streamKey);
    if (refusal) return { refusal };
    // Admitted: published locally under the stream id (no secret in any command line).
    return { alias: this.deps.store.streams.getByStreamKey(streamKey)!.id };
  }

  /** Why a publish of this key is refused now; undefined when it may go on. */
  private refusal(streamKey: string): Refusal | undefined {
    if (this.shuttingDown) return rejected("the server is shutting down: reconnect in a moment");
    if (!this.deps.ffmpegPath) return rejected("ffmpeg is not available on this server");
    const stream = this.deps.store.streams.getByStreamKey(streamKey);
    if (!stream) return badName("unknown stream key");
    if (stream.suspended) return badName(`stream ${stream.id} is suspended`);
    // After the key: a stranger's publishes do not get to make this server write to disk.
    const storage = this.deps.storageProblem?.();
    if (storage) return rejected(`storage unavailable: ${storage}`);
    const broken = this.breaker.refusal(stream.id, Date.now());
    if (broken) return rejected(broken);
    // A stream with an open session (live, or waiting in its reconnect window) keeps its
    // place: a reconnect or a new publisher replacing the old one is not counted again.
    if (this.byStream.has(stream.id)) return undefined;
    const max = this.deps.maxLiveStreamsPerUser;
    if (max !== undefined) {
      let live = 0;
      for (const s of this.byStream.values()) if (s.stream.userId === stream.userId) live++;
      if (live >= max) return rejected(`user ${stream.userId} already has ${live} live streams, the limit (MAX_LIVE_STREAMS_PER_USER=${max})`);
    }
    let used = 0;
    for (const s of this.byStream.values()) used += ladderCost(s.profiles);
    const full = refuseForCapacity(ladderCost(stream.profiles), used, this.budget);
    if (full) return rejected(full);
    return undefined;
  }

  onPublishStart(publisherId: string, streamKey: string): Refusal | undefined {
    // Admitted at the publish command; its first video tag came since, and with it perhaps a
    // suspend, a delete or a cap reached: ask again.
    const refusal = this.refusal(streamKey);
    if (refusal) return refusal;
    const stream = this.deps.store.streams.getByStreamKey(streamKey)!;
    const current = this.byStream.get(stream.id);
    if (!current) return this.begin(stream.id, publisherId);
    if (!current.isEnding) {
      current.attach(publisherId);
      this.byPublisher.set(publisherId, current);
      return undefined;
    }
    // The previous session is still ending (its playlists, stream.idle): this publisher waits
    // (node-media-server holds its media), then starts the next one. One session at a time.
    this.successors.set(stream.id, publisherId);
    void current.closed.then(() => {
      if (this.successors.get(stream.id) !== publisherId) return; // it left while waiting
      this.successors.delete(stream.id);
      const late = this.refusal(streamKey) ?? this.begin(stream.id, publisherId);
      if (late) this.deps.disconnectPublisher(publisherId, late);
    });
    return undefined;
  }

  private begin(streamId: string, publisherId: string): Refusal | undefined {
    const stream = this.deps.store.streams.get(streamId);
    if (!stream) return badName("unknown stream key");
    let runtime: StreamRuntime;
    try {
      runtime = new StreamRuntime(stream, publisherId, { ...this.deps, ffmpegPath: this.deps.ffmpegPath! }, (s) => this.forget(s));
    } catch (err) {
      // The session row could not be written (a full disk): refuse rather than crash.
      this.deps.log.error({ err, streamId, publisherId }, "could not start a live session: publish refused");
      return rejected("storage unavailable: the session could not be recorded");
    }
    this.byStream.set(stream.id, runtime);
    this.byPublisher.set(publisherId, runtime);
    runtime.start();
    return undefined;
  }

  onPublishEnd(publisherId: string, refusal?: string): void {
    for (const [streamId, waiting] of this.successors) if (waiting === publisherId) this.successors.delete(streamId);
    const runtime = this.byPublisher.get(publisherId);
    this.byPublisher.delete(publisherId);
    runtime?.detach(publisherId, refusal);
  }

  /** The stream's settings changed: observers of a live session may need to act. */
  streamChanged(streamId: string): void {
    if (!this.byStream.get(streamId)?.isLive) return;
    for (const o of this.deps.observers) o.streamChanged?.(streamId);
  }

  /** Suspend and delete end the live session at once (spec 4.1, DESIGN.md), its window too. */
  interrupt(streamId: string, reason: "suspended" | "deleted" | "terminated"): void {
    void this.byStream.get(streamId)?.stop(reason);
  }

  /** Live rates by parent stream id, or by session (= child stream) id. */
  rates(id: string): LiveRates | undefined {
    const runtime = this.find(id);
    return runtime?.isLive ? runtime.rates() : undefined;
  }

  /** Health of a stream with an open session (live or reconnecting), by stream or session id. */
  health(id: string): Health | undefined {
    const runtime = this.find(id);
    return runtime && !runtime.isEnding ? runtime.health() : undefined;
  }

  private find(id: string): StreamRuntime | undefined {
    return this.byStream.get(id) ?? [...this.byStream.values()].find((s) => s.session.id === id);
  }

  /** The open session of a stream, if any (tests, metrics). */
  liveSession(streamId: string): StreamRuntime | undefined {
    return this.byStream.get(streamId);
  }

  /** Every open session (health metrics). */
  runtimes(): StreamRuntime[] {
    return [...this.byStream.values()];
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

  private forget(s: StreamRuntime): void {
    if (this.byStream.get(s.stream.id) === s) this.byStream.delete(s.stream.id);
    for (const [publisherId, runtime] of this.byPublisher) if (runtime === s) this.byPublisher.delete(publisherId);
    if (s.endReason === "pipeline failed") this.breaker.failed(s.stream.id, Date.now());
  }
}
