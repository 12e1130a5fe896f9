import os from "node:os";
import path from "node:path";
import type { LiveControl } from "./control";
import type { LiveRates } from "../shapes";
import type { SessionRecord, StreamRecord } from "../db";
import { badName, rejected, type Admission, type IngestHandlers, type Refusal } from "../ingest";
import { endPlaylists } from "../media";
import { PipelineBreaker } from "./breaker";
import { defaultTranscodeBudget, ladderCost, refuseForCapacity } from "./capacity";
import type { Health } from "./health";
import { StreamRuntime, type EndReason, type StreamRuntimeDeps } from "./streamRuntime";

export type SessionManagerDeps = Omit<StreamRuntimeDeps, "ffmpegPath" | "streamTakenOver"> & {
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
  /** Publishes admitted and not started yet, holding their place (caps, capacity), by publisher. */
  private readonly pending = new Map<string, StreamRecord>();
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

  admit(streamKey: string, publisherId: string): Admission {
    const decision = this.decide(streamKey, publisherId);
    if ("refusal" in decision) return decision;
    // Its place is held from now to its start (or its end): publishes arriving together, as
    // encoders do after a restart, cannot all pass here and be refused after they started.
    if (!this.byStream.has(decision.stream.id)) this.pending.set(publisherId, decision.stream);
    // Published locally under the stream id (no secret in any command line).
    return { alias: decision.stream.id };
  }

  /** Whether a publish of this key may go on now, and its stream. */
  private decide(streamKey: string, publisherId: string): { refusal: Refusal } | { stream: StreamRecord } {
    const refuse = (refusal: Refusal) => ({ refusal });
    if (this.shuttingDown) return refuse(rejected("the server is shutting down: reconnect in a moment"));
    if (!this.deps.ffmpegPath) return refuse(rejected("ffmpeg is not available on this server"));
    const stream = this.deps.store.streams.getByStreamKey(streamKey);
    if (!stream) return refuse(badName("unknown stream key"));
    if (stream.suspended) return refuse(badName(`stream ${stream.id} is suspended`));
    // After the key: a stranger's publishes do not get to make this server write to disk.
    if (this.deps.storageProblem()) return refuse(rejected("storage unavailable on the server: reconnect later"));
    const broken = this.breaker.refusal(stream.id, Date.now());
    if (broken) return refuse(rejected(broken));
    // A stream with an open session (live, or waiting in its reconnect window) keeps its
    // place: a reconnect or a new publisher replacing the old one is not counted again.
    if (this.byStream.has(stream.id)) return { stream };
    // Open sessions and publishes admitted but not started yet, this one's own place aside.
    const holding = [...this.byStream.values()].map((s) => s.stream);
    for (const [id, s] of this.pending) if (id !== publisherId && s.id !== stream.id) holding.push(s);
    const max = this.deps.maxLiveStreamsPerUser;
    if (max !== undefined) {
      const live = new Set(holding.filter((s) => s.userId === stream.userId).map((s) => s.id)).size;
      if (live >= max) return refuse(rejected(`user ${stream.userId} already has ${live} live streams, the limit (MAX_LIVE_STREAMS_PER_USER=${max})`));
    }
    const used = holding.reduce((sum, s) => sum + ladderCost(s.profiles), 0);
    const full = refuseForCapacity(ladderCost(stream.profiles), used, this.budget);
    if (full) return refuse(rejected(full));
    return { stream };
  }

  onPublishStart(publisherId: string, streamKey: string): Refusal | undefined {
    // Admitted at the publish command; its first video tag came since, and with it perhaps a
    // suspend, a delete or a cap reached: ask again.
    const decision = this.decide(streamKey, publisherId);
    this.pending.delete(publisherId);
    if ("refusal" in decision) return decision.refusal;
    const { stream } = decision;
    const current = this.byStream.get(stream.id);
    if (!current) return this.begin(stream.id, publisherId);
    if (!current.isEnding) {
      // Known before attach: attach may end the session at once (a failed start), and forget it.
      this.byPublisher.set(publisherId, current);
      current.attach(publisherId);
      return undefined;
    }
    // The previous session is still ending (its playlists, stream.idle): this publisher waits
    // (node-media-server holds its media), then starts the next one. One session at a time.
    this.successors.set(stream.id, publisherId);
    void current.closed
      .then(() => {
        if (this.successors.get(stream.id) !== publisherId) return; // it left while waiting
        this.successors.delete(stream.id);
        const decision = this.decide(streamKey, publisherId);
        const late = "refusal" in decision ? decision.refusal : this.begin(stream.id, publisherId);
        if (late) this.deps.disconnectPublisher(publisherId, late);
      })
      .catch((err: unknown) => {
        this.deps.log.error({ err, streamId: stream.id, publisherId }, "could not start the next session: publisher disconnected");
        this.deps.disconnectPublisher(publisherId, rejected("internal error on the server: reconnect later"));
      });
    return undefined;
  }

  private begin(streamId: string, publisherId: string): Refusal | undefined {
    const stream = this.deps.store.streams.get(streamId);
    if (!stream) return badName("unknown stream key");
    let runtime: StreamRuntime;
    try {
      runtime = new StreamRuntime(
        stream,
        publisherId,
        { ...this.deps, ffmpegPath: this.deps.ffmpegPath!, streamTakenOver: (id) => this.byStream.has(id) },
        (s) => this.forget(s),
      );
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
    this.pending.delete(publisherId);
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
