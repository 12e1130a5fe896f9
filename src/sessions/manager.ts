import os from "node:os";
import path from "node:path";
import type { LiveControl, StreamNotice } from "./control";
import type { StreamKeyIndex } from "./streamKeys";
import { endOrphanedSession, type OrphanDeps } from "./orphans";
import { refusePublish, type IngestProtocol, type LiveRates, type PublishRefusal } from "../shapes";
import { NodesRepository, type ControlState, type Lease, type SessionRecord, type Sql, type StreamRecord } from "../db";
import { PASSTHROUGH_VIDEO, type Admission, type IngestHandlers } from "../ingest";
import { endPlaylists } from "../media";
import { PipelineBreaker } from "./breaker";
import { realClock, type Clock } from "./clock";
import { defaultTranscodeBudget, ladderCost, refuseForCapacity } from "./capacity";
import type { Health } from "./health";
import type { EndReason } from "./endReason";
import { StreamRuntime, type StreamRuntimeDeps } from "./streamRuntime";

export type SessionManagerDeps = Omit<StreamRuntimeDeps, "ffmpegPath" | "streamTakenOver"> & {
  ffmpegPath: string | undefined;
  /** MAX_LIVE_STREAMS_PER_USER: concurrent publishes of one user's streams; unlimited when absent. */
  maxLiveStreamsPerUser?: number;
  /** TRANSCODE_BUDGET: output megapixels per second this node encodes at most; a default from the core count. */
  transcodeBudget?: number;
  /** The publishable streams by key, in memory: admission is synchronous. */
  keys: StreamKeyIndex;
  /** Tells other nodes of a stream notice (PostgreSQL NOTIFY), inside the transaction; absent on one node. */
  broadcast?: (q: Sql, notice: StreamNotice) => Promise<void>;
  /** This node: its sessions carry its id, and it holds a lease on each stream it runs. */
  nodeId: string;
  /** How long a stream's lease lasts without a heartbeat renewing it, ms. */
  leaseMs: number;
  /** Ends sessions left open by a node that is gone (a takeover). */
  orphans: OrphanDeps;
  /**
   * A publish of a stream another node holds (live there, or waiting there for this encoder's
   * reconnect) is relayed to that node, which continues its session; absent: refused.
   */
  relay?: {
    start(publisherId: string, stream: StreamRecord, holder: string): Promise<PublishRefusal | undefined>;
    /** The publisher left: whether it was relayed. */
    stop(publisherId: string): boolean;
    stopAll(): void;
  };
};

/**
 * The hub of live media (docs/architecture.md#the-session-manager): one StreamRuntime per live stream. The ingest asks it to
 * admit publishes and hands it publishers; the API asks it to interrupt streams. It is the only
 * place that starts and stops sessions and the only writer of isActive (through the runtimes).
 */
export class SessionManager implements IngestHandlers, LiveControl {
  private readonly byStream = new Map<string, StreamRuntime>();
  private readonly byPublisher = new Map<string, StreamRuntime>();
  /** Publishes admitted and not started yet, holding their place (caps, capacity), by publisher. */
  private readonly pending = new Map<string, StreamRecord>();
  /** Publishers whose session is being opened (its row written), and their streams. */
  private readonly opening = new Map<string, StreamRecord>();
  /** A publisher waiting for its stream's previous session to finish ending, by stream id. */
  private readonly successors = new Map<string, string>();
  private readonly breaker = new PipelineBreaker();
  private readonly budget: number;
  private shuttingDown = false;
  private readonly clock: Clock;

  constructor(private readonly deps: SessionManagerDeps) {
    this.clock = deps.clock ?? realClock;
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
    if (!this.byStream.has(decision.stream.id) && !this.isOpening(decision.stream.id)) this.pending.set(publisherId, decision.stream);
    // Published locally under the stream id (no secret in any command line).
    return { alias: decision.stream.id };
  }

  /** Whether a publish of this key may go on now, and its stream. */
  private decide(streamKey: string, publisherId: string): { refusal: PublishRefusal } | { stream: StreamRecord } {
    const refuse = (refusal: PublishRefusal) => ({ refusal });
    // The key first, whatever else holds: a wrong key is the encoder's to fix, not to retry.
    const stream = this.deps.keys.lookup(streamKey);
    if (!stream) return refuse(refusePublish("unknown", "unknown stream key"));
    if (stream.suspended) return refuse(refusePublish("suspended", `stream ${stream.id} is suspended`));
    if (this.shuttingDown) return refuse(refusePublish("unavailable", "the server is shutting down: reconnect in a moment"));
    if (!this.deps.ffmpegPath) return refuse(refusePublish("unavailable", "ffmpeg is not available on this server"));
    // After the key: a stranger's publishes do not get to make this server write to disk.
    if (this.deps.storageProblem()) return refuse(refusePublish("unavailable", "storage unavailable on the server: reconnect later"));
    const broken = this.breaker.refusal(stream.id, this.clock.now());
    if (broken) return refuse(refusePublish("unavailable", broken));
    // A stream with an open session (live, or waiting in its reconnect window) keeps its
    // place: a reconnect or a new publisher replacing the old one is not counted again.
    if (this.byStream.has(stream.id) || this.isOpening(stream.id)) return { stream };
    const holding = this.holding(publisherId, stream.id);
    const max = this.deps.maxLiveStreamsPerUser;
    if (max !== undefined) {
      const live = new Set(holding.filter((s) => s.userId === stream.userId).map((s) => s.id)).size;
      if (live >= max) return refuse(refusePublish("unavailable", `user ${stream.userId} already has ${live} live streams, the limit (MAX_LIVE_STREAMS_PER_USER=${max})`));
    }
    const used = holding.reduce((sum, s) => sum + ladderCost(s.profiles), 0);
    const full = refuseForCapacity(ladderCost(stream.profiles), used, this.budget);
    if (full) return refuse(refusePublish("unavailable", full));
    return { stream };
  }

  /**
   * Open sessions and publishes admitted but not started yet, one place per stream however many
   * publishes hold it (a WHIP publish and its bridge's); a publish's own place aside.
   */
  private holding(exceptPublisher?: string, exceptStream?: string): StreamRecord[] {
    const held = new Map<string, StreamRecord>();
    for (const s of [...[...this.byStream.values()].map((r) => r.stream), ...this.opening.values()]) held.set(s.id, s);
    for (const [id, s] of this.pending) if (id !== exceptPublisher && s.id !== exceptStream) held.set(s.id, s);
    return [...held.values()];
  }

  /** The streams of `userId` holding a live place here, as MAX_LIVE_STREAMS_PER_USER counts them (the pull ingest counts its pulls with them). */
  liveStreamsOf(userId: string): Set<string> {
    return new Set(this.holding().filter((s) => s.userId === userId).map((s) => s.id));
  }

  /**
   * Whether a publish of this key would be taken now, for protocols that answer over HTTP
   * (WHIP): the same decision as an RTMP publish's, which the edge words as an HTTP status. A stream live on this node
   * is taken over by the new publisher, as with RTMP; one held by another node is relayed there
   * (its bridge's publish is, as an RTMP publish would be), or a 409 without relays.
   */
  async checkPublish(streamKey: string, holder: string): Promise<{ stream: StreamRecord } | { refusal: PublishRefusal }> {
    const decision = this.decide(streamKey, holder);
    if ("refusal" in decision) return decision;
    const indexed = decision.stream;
    // Its place is held while the lease is looked at, and from the answer to its bridge's publish.
    this.pending.set(holder, decision.stream);
    if (this.deps.relay) return decision;
    const leaseHolder = this.byStream.has(indexed.id) ? undefined : await this.deps.store.nodes.holder(indexed.id).catch((err: unknown) => {
      this.pending.delete(holder);
      throw err;
    });
    if (leaseHolder !== undefined && leaseHolder !== this.deps.nodeId) {
      this.pending.delete(holder);
      return { refusal: refusePublish("elsewhere", `stream ${indexed.id} is live on another node (${leaseHolder})`) };
    }
    return decision;
  }

  /** A place held by checkPublish is given up (the publish ended, or its bridge publishes now). */
  releaseHold(holder: string): void {
    this.pending.delete(holder);
  }

  async onPublishStart(publisherId: string, streamKey: string, protocol: IngestProtocol = "rtmp"): Promise<PublishRefusal | undefined> {
    // Admitted at the publish command; its first video tag came since, and with it perhaps a
    // suspend, a delete or a cap reached: ask again.
    const decision = this.decide(streamKey, publisherId);
    this.pending.delete(publisherId);
    if ("refusal" in decision) return decision.refusal;
    const { stream } = decision;
    if (this.isOpening(stream.id)) return refusePublish("unavailable", "another publisher of this stream is starting: reconnect in a moment");
    const current = this.byStream.get(stream.id);
    if (!current) return this.begin(stream, publisherId, protocol);
    if (!current.isEnding && !current.takesTracks(this.deps.publisherStats(publisherId)?.videoTracks)) {
      // The session's renditions are its encoder's tracks: another ladder is another session.
      void current.stop("publisher left", "the publisher came back with other video tracks: a new session starts");
    }

    if (!current.isEnding) {
      // Known before attach: attach may end the session at once (a failed start), and forget it.
      this.byPublisher.set(publisherId, current);
      current.attach(publisherId);
      return undefined;
    }
    // The previous session is still ending (its playlists, stream.idle): this publisher waits
    // (the ingest keeps its newest group of pictures for the readers), then starts the next one. One session at a time.
    this.successors.set(stream.id, publisherId);
    void current.closed
      .then(() => {
        if (this.successors.get(stream.id) !== publisherId) return; // it left while waiting
        this.successors.delete(stream.id);
        const decision = this.decide(streamKey, publisherId);
        return "refusal" in decision ? decision.refusal : this.begin(stream, publisherId, protocol);
      })
      .then((late) => {
        if (late) this.deps.disconnectPublisher(publisherId, late);
      })
      .catch((err: unknown) => {
        this.deps.log.error({ err, streamId: stream.id, publisherId }, "could not start the next session: publisher disconnected");
        this.deps.disconnectPublisher(publisherId, refusePublish("unavailable", "internal error on the server: reconnect later"));
      });
    return undefined;
  }

  /**
   * Opens the stream's session for the publisher: the stream read afresh (the key index may lag
   * a change of its settings) and the session row written. The stream's place is held meanwhile.
   */
  private async begin(indexed: StreamRecord, publisherId: string, protocol: IngestProtocol): Promise<PublishRefusal | undefined> {
    const refusal = await this.open(indexed, publisherId, protocol);
    // Refused: its departure, if it left meanwhile, concerns nothing any more.
    if (refusal) this.departed.delete(publisherId);
    return refusal;
  }

  /** begin's work: the lease, the sessions a lost node left, the runtime. */
  private async open(indexed: StreamRecord, publisherId: string, protocol: IngestProtocol): Promise<PublishRefusal | undefined> {
    const streamId = indexed.id;
    this.opening.set(publisherId, indexed);
    let runtime: StreamRuntime;
    let lease: Lease | undefined;
    try {
      const { store, nodeId } = this.deps;
      // The control count as the publish arrived: a terminate stored from now on ends this session.
      const controlSeq = (await store.nodes.controlStates([streamId]))[0]?.controlSeq ?? 0;
      const stream = await store.streams.get(streamId);
      if (!stream || stream.suspended) return stream ? refusePublish("suspended", `stream ${stream.id} is suspended`) : refusePublish("unknown", "unknown stream key");
      // The ladder the session will have is the stream's as read now (the key index may lag).
      // One node runs a stream at a time: its lease, taken here with a new epoch, renewed by the
      // heartbeat. The user's live streams on every node count against their cap.
      await this.released.get(streamId);
      const max = this.deps.maxLiveStreamsPerUser;
      const claim = await store.nodes.claimStream(streamId, nodeId, this.deps.leaseMs, max === undefined ? undefined : { userId: stream.userId, max });
      if (!claim.taken) {
        if ("liveStreams" in claim) return refusePublish("unavailable", `user ${stream.userId} already has ${claim.liveStreams} live streams, the limit (MAX_LIVE_STREAMS_PER_USER=${max})`);
        if (!this.deps.relay) return refusePublish("elsewhere", `stream ${streamId} is live on another node (${claim.holder}): reconnect in a moment`);
        // A relay pushes FLV, which carries H.264 only.
        const codec = this.deps.publisherStats(publisherId)?.videoCodec;
        if (codec !== undefined && codec !== PASSTHROUGH_VIDEO) {
          return refusePublish("elsewhere", `stream ${streamId} is live on another node (${claim.holder}), and video codec ${codec} cannot be relayed there: publish to that node, or send ${PASSTHROUGH_VIDEO}`);
        }
        const refusal = await this.deps.relay.start(publisherId, stream, claim.holder);
        // It left while the relay was being set up.
        if (!refusal && this.departed.delete(publisherId)) this.deps.relay.stop(publisherId);
        return refusal;
      }
      lease = claim.lease;
      // Suspended or deleted since it was read: as the take saw it, nothing opens.
      if (claim.suspended || claim.deleted) {
        await store.nodes.releaseStream(claim.lease);
        return claim.deleted ? refusePublish("unknown", "unknown stream key") : refusePublish("suspended", `stream ${stream.id} is suspended`);
      }
      // The lease was free or ran out: a session still open elsewhere belongs to a node that
      // is gone. It ends now (once, whichever node gets there first), before this one opens.
      for (const s of await store.sessions.listOpenForParent(streamId)) {
        await endOrphanedSession(this.deps.orphans, s, `node ${s.nodeId ?? "unknown"} stopped answering: the stream was taken over by node ${nodeId}`, { takenBy: nodeId });
      }
      runtime = await StreamRuntime.open(
        stream,
        publisherId,
        { ...this.deps, ffmpegPath: this.deps.ffmpegPath!, streamTakenOver: (id) => this.byStream.has(id) },
        (s) => this.forget(s),
        { protocol, lease: claim.lease, controlSeq },
      );
    } catch (err) {
      // The session row could not be written (a full disk): refuse rather than crash, and give
      // the stream back (a lease held with no session would count against the user's cap).
      this.deps.log.error({ err, streamId, publisherId }, "could not start a live session: publish refused");
      if (lease) await this.deps.store.nodes.releaseStream(lease).catch(() => undefined);
      return refusePublish("unavailable", "storage unavailable: the session could not be recorded");
    } finally {
      this.opening.delete(publisherId);
    }
    this.byStream.set(streamId, runtime);
    this.byPublisher.set(publisherId, runtime);
    runtime.start();
    // The publisher left while its session was being opened: the session hears it now.
    if (this.departed.delete(publisherId)) runtime.detach(publisherId);
    // A suspend, delete or terminate stored while this session was being opened found no session
    // to end: it is read now rather than at the next poll.
    void this.reconcile([streamId]);
    return undefined;
  }

  private isOpening(streamId: string): boolean {
    for (const s of this.opening.values()) if (s.id === streamId) return true;
    return false;
  }

  /** Publishers that left while their session was being opened. */
  private readonly departed = new Set<string>();

  onPublishEnd(publisherId: string, refusal?: string): void {
    this.pending.delete(publisherId);
    if (this.opening.has(publisherId)) this.departed.add(publisherId);
    for (const [streamId, waiting] of this.successors) if (waiting === publisherId) this.successors.delete(streamId);
    if (this.deps.relay?.stop(publisherId)) return;
    const runtime = this.byPublisher.get(publisherId);
    this.byPublisher.delete(publisherId);
    runtime?.detach(publisherId, refusal);
  }

  async announce(q: Sql, notice: StreamNotice): Promise<void> {
    // Stored with the change: NOTIFY only wakes the nodes, the poll converges on this.
    await new NodesRepository(q).recordControl(notice.streamId, notice.change === "terminated");
    await this.deps.broadcast?.(q, notice);
    q.afterCommit(() => void this.heard(notice));
  }

  /** A stream notice, from this node or another: the key index first, then the live session. */
  async heard(notice: StreamNotice): Promise<void> {
    try {
      await this.deps.keys.refresh(notice.streamId);
    } catch (err) {
      this.deps.log.warn({ err, streamId: notice.streamId }, "could not refresh a stream's key; the next reload will");
    }
    // The notice only wakes this node: what to do is read from the stored state, so a late or
    // repeated notice acts as the stored change says (a terminate never ends a later session).
    await this.reconcile([notice.streamId]);
  }

  /** The stream's settings changed: observers of a live session may need to act. */
  streamChanged(streamId: string): void {
    if (!this.byStream.get(streamId)?.isLive) return;
    for (const o of this.deps.observers) o.streamChanged?.(streamId);
  }

  /** Suspend and delete end the live session at once (docs/api.md#spec-41-streams, docs/architecture.md#session-lifecycle), its window too. */
  interrupt(streamId: string, reason: "suspended" | "deleted" | "terminated"): void {
    void this.byStream.get(streamId)?.stop(reason);
  }

  /**
   * Converges the open sessions here (or those of `ids`) on the stored control state: deleted
   * or suspended streams end, a terminate stored after a session opened ends it, changed
   * settings are applied once, and a session whose lease another node took stops without
   * writing anything (that node, or the janitor, ended it). Run by the control poll, after a
   * session opens, and for what a heartbeat found.
   */
  async reconcile(ids?: string[]): Promise<void> {
    const runtimes = new Map((ids ?? [...this.byStream.keys()]).flatMap((id) => {
      const r = this.byStream.get(id);
      return r && !r.isEnding ? [[id, r] as const] : [];
    }));
    if (runtimes.size === 0) return;
    let states: ControlState[];
    try {
      states = await this.deps.store.nodes.controlStates([...runtimes.keys()]);
    } catch (err) {
      this.deps.log.warn({ err }, "control poll: could not read the live streams' state; will retry");
      return;
    }
    const byId = new Map(states.map((s) => [s.streamId, s]));
    for (const [streamId, runtime] of runtimes) {
      if (this.byStream.get(streamId) !== runtime || runtime.isEnding) continue;
      const s = byId.get(streamId);
      if (!s || s.liveNode !== runtime.lease.nodeId || s.epoch !== runtime.lease.epoch) runtime.abandon(`another node holds the stream now (${s?.liveNode ?? "none"}, epoch ${s?.epoch ?? "?"})`);
      else if (s.deleted) this.interrupt(streamId, "deleted");
      else if (s.suspended) this.interrupt(streamId, "suspended");
      else if (s.terminateSeq > runtime.controlSeq) this.interrupt(streamId, "terminated");
      else if (s.controlSeq > runtime.appliedControlSeq) {
        runtime.appliedControlSeq = s.controlSeq;
        this.streamChanged(streamId);
      }
    }
  }

  /**
   * A heartbeat's answer: the leases this node still holds. A session whose lease is not among
   * them was taken while this node was away (a pause, a cut from the database) and stops here
   * without writing; it is looked at once more first, as a session opened during the
   * heartbeat is not in its answer. A lease held with no session is given back.
   */
  async leasesHeld(held: Lease[]): Promise<void> {
    for (const l of held) {
      if (this.byStream.has(l.streamId) || this.isOpening(l.streamId) || this.released.has(l.streamId)) continue;
      // Held with no session here (an open that failed half-way): given back, so the stream is free.
      await this.deps.store.nodes.releaseStream(l).catch(() => undefined);
    }
    const current = new Set(held.map((l) => `${l.streamId} ${l.epoch}`));
    for (const runtime of this.runtimes()) {
      const { lease } = runtime;
      if (runtime.isEnding || current.has(`${lease.streamId} ${lease.epoch}`)) continue;
      const still = await this.deps.store.nodes.holds(lease).catch(() => true);
      if (!still) runtime.abandon(`its lease (epoch ${lease.epoch}) was taken while this node was away`);
    }
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
  async recoverAfterCrash(onlyNode: boolean): Promise<SessionRecord[]> {
    const { store, log, nodeId } = this.deps;
    // Alone on the database (SQLite): every open session was the previous run's. Among several
    // nodes: those of this node's id (a restart with the same NODE_ID) and of no node (a run
    // from before nodes); other nodes' are the janitor's, once their leases run out.
    const open = (await store.sessions.listOpen()).filter((s) => onlyNode || s.nodeId === null || s.nodeId === nodeId);
    // Leases first: the previous run's are this run's to give up, and ending its sessions below
    // must not find them still held.
    if (onlyNode) await store.nodes.releaseAll();
    else await store.nodes.leave(nodeId);
    for (const s of open) {
      const parent = await store.streams.get(s.parentId);
      await endOrphanedSession(this.deps.orphans, s, "server stopped: the previous run ended without closing it");
      if (parent?.playbackId) endPlaylists(path.join(this.deps.hlsDir, parent.playbackId));
      log.warn({ streamId: s.parentId, sessionId: s.id }, "closed a session left open by a previous run");
    }
    if (onlyNode) for (const s of await store.streams.listActive()) await store.streams.setActive([s.id], false);
    return open;
  }

  /** Ends every live session (publishers disconnected, playlists ended, stream.idle raised). */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    this.deps.relay?.stopAll();
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

  /** Leases being given back, by stream: the next session of the stream waits for it. */
  private readonly released = new Map<string, Promise<void>>();

  private forget(s: StreamRuntime): void {
    const streamId = s.stream.id;
    // Once its end is written: until then the end's retries need the lease, and the stream's
    // next session (here or elsewhere) waits, so that it never has two open sessions.
    const release = s.endWritten
      .then(() => this.deps.store.nodes.releaseStream(s.lease))
      .catch((err: unknown) => this.deps.log.warn({ err, streamId }, "could not give the stream's lease back; it runs out by itself"))
      .finally(() => {
        if (this.released.get(streamId) === release) this.released.delete(streamId);
      });
    this.released.set(streamId, release);
    if (this.byStream.get(s.stream.id) === s) this.byStream.delete(s.stream.id);
    for (const [publisherId, runtime] of this.byPublisher) if (runtime === s) this.byPublisher.delete(publisherId);
    if (s.endReason === "pipeline failed") this.breaker.failed(s.stream.id, this.clock.now());
  }
}
