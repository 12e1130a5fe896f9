import fs from "node:fs";
import type { Store, TargetRecord } from "../db";
import type { EventSink } from "../events";
import type { Logger } from "../log";
import type { ProcessRegistry, RestartMetrics } from "../media";
import type { OutboundPolicy } from "../outbound";
import type { LiveSessionInfo, LiveSessionObserver } from "../sessions";
import type { EventName, EventTarget } from "../shapes";
import { diffPushes, planPushes, type PushSpec } from "./plan";
import { TargetPush, type PushReport } from "./targetPush";

export interface MultistreamDeps {
  store: Store;
  events: EventSink;
  log: Logger;
  registry: ProcessRegistry;
  /** Sessions only start with ffmpeg; undefined means none will. */
  ffmpegPath: string | undefined;
  /** Which destinations pushes may connect to, asked before every attempt. */
  policy: OutboundPolicy;
  /** Where the pushes' restarts are counted (onair_restarts_total{kind="multistream_push"}). */
  metrics?: RestartMetrics;
  /** The CA bundle rtmps certificates are verified against; default: the system's, if found. */
  caFile?: string;
  /**
   * How long a push may go on sending after its session ended or its publisher left: a source
   * push ends at its input's end; a rendition push runs a segment or two behind the live edge
   * and, since a session's playlists stay open while it waits for its publisher, is stopped
   * after this. Default 5 s.
   */
  drainMs?: number;
}

interface RunningPush {
  spec: PushSpec;
  push: TargetPush;
}

interface LivePushes {
  info: LiveSessionInfo;
  pushes: Map<string, RunningPush>;
  /** Problems already reported in this session (multistream.error once each). */
  reported: Set<string>;
  /** Reconciles run one after another: each reads the references afresh. */
  reconciling: Promise<void>;
}

/**
 * Multistream (docs/api.md#spec-1-what-the-service-does, docs/api.md#spec-34-multistream-connection): while a stream is live, one push per referenced, enabled target,
 * each its own supervised ffmpeg, so a failing destination never touches the session's HLS or
 * the other pushes. Told about sessions by the session manager; reads the references afresh
 * whenever the stream or a target changes, and starts or stops only what differs.
 */
export class MultistreamManager implements LiveSessionObserver {
  private readonly live = new Map<string, LivePushes>();
  /** Pushes still finishing after their publisher left, by stream (stopped if it comes back first). */
  private readonly draining = new Map<string, TargetPush[]>();
  /** Pushes finishing after their session ended, until they have. */
  private readonly finishing = new Set<TargetPush>();
  private readonly drainMs: number;
  private readonly caFile: string | undefined;

  constructor(private readonly deps: MultistreamDeps) {
    this.drainMs = deps.drainMs ?? 5000;
    this.caFile = deps.caFile ?? SYSTEM_CA_FILES.find((f) => fs.existsSync(f));
  }

  sessionLive(info: LiveSessionInfo): void {
    const entry: LivePushes = { info, pushes: new Map(), reported: new Set(), reconciling: Promise.resolve() };
    this.live.set(info.streamId, entry);
    const draining = this.draining.get(info.streamId);
    if (!draining) return this.reconcile(entry);
    // The publisher is back while the previous pushes still finish: they stop first, so a
    // destination never sees two pushes of the same stream at once.
    this.draining.delete(info.streamId);
    void Promise.all(draining.map((p) => p.stop())).then(() => {
      if (this.live.get(info.streamId) === entry) this.reconcile(entry);
    });
  }

  streamChanged(streamId: string): void {
    const entry = this.live.get(streamId);
    if (entry) this.reconcile(entry);
  }

  /** The publisher left: the pushes finish what they have; sessionLive starts them again on a reconnect. */
  sourceLost(info: LiveSessionInfo): void {
    const pushes = this.finishAll(info, "publisher left");
    if (pushes.length === 0) return;
    this.draining.set(info.streamId, pushes);
    void Promise.all(pushes.map((p) => p.closed)).then(() => {
      if (this.draining.get(info.streamId) === pushes) this.draining.delete(info.streamId);
    });
  }

  sessionEnded(info: LiveSessionInfo): void {
    this.finishAll(info, "session ended");
    this.draining.delete(info.streamId);
  }

  /** The session's pushes send what their input still holds, then end (bounded by drainMs). */
  private finishAll(info: LiveSessionInfo, why: string): TargetPush[] {
    const entry = this.live.get(info.streamId);
    if (!entry || entry.info.sessionId !== info.sessionId) return [];
    this.live.delete(info.streamId);
    if (entry.pushes.size > 0) info.log.info({ pushes: entry.pushes.size, why }, "finishing the multistream pushes");
    const pushes = [...entry.pushes.values()].map((r) => r.push);
    for (const push of pushes) {
      this.finishing.add(push);
      void push.finish(this.drainMs).finally(() => this.finishing.delete(push));
    }
    return pushes;
  }

  /**
   * Resolves once every push a session end asked to finish has ended and said so: a shutdown
   * waits for this before the stores close, or a push ending late (its destination slow to take
   * the last of its media) would raise multistream.disconnected into a closed event sink.
   */
  async settled(): Promise<void> {
    await Promise.all([...this.finishing].map((p) => p.closed));
  }

  /** Brings a live session's pushes in line with its stream's references: only what differs. */
  private reconcile(entry: LivePushes): void {
    entry.reconciling = entry.reconciling.then(() => this.reconcileNow(entry));
  }

  private async reconcileNow(entry: LivePushes): Promise<void> {
    const { info } = entry;
    const ffmpegPath = this.deps.ffmpegPath;
    if (!ffmpegPath) return;
    try {
      const { store } = this.deps;
      const refs = await store.streamTargets.listForStream(info.streamId);
      const targets = new Map<string, TargetRecord | undefined>();
      for (const r of refs) if (!targets.has(r.id)) targets.set(r.id, await store.targets.get(r.id));
      // The session ended while the references were read.
      if (this.live.get(info.streamId) !== entry) return;
      const plan = planPushes({
        refs,
        target: (id) => targets.get(id),
        renditions: info.renditions,
        hlsDir: info.hlsDir,
        source: info.source,
        sourceCodec: info.sourceCodec(),
      });
      const changes = diffPushes(new Map([...entry.pushes].map(([k, r]) => [k, r.spec])), plan);

      for (const { key, why } of changes.stop) {
        const running = entry.pushes.get(key)!;
        entry.pushes.delete(key);
        info.log.info({ ...targetFields(running.spec.target), why }, "stopping multistream push");
        void running.push.stop();
      }
      for (const spec of changes.keep) entry.pushes.get(spec.key)!.push.rename(spec.target.name);
      for (const spec of changes.start) {
        const log = info.log.child({ ...targetFields(spec.target), videoOnly: spec.videoOnly, input: spec.input.kind });
        const push = new TargetPush({
          target: spec.target,
          url: spec.url,
          tlsVerify: spec.tlsVerify,
          caFile: this.caFile,
          policy: this.deps.policy,
          videoOnly: spec.videoOnly,
          input: spec.input,
          ffmpegPath,
          registry: this.deps.registry,
          log,
          ...(this.deps.metrics ? { metrics: this.deps.metrics } : {}),
          report: (r) => this.report(info, push.target, r),
        });
        entry.pushes.set(spec.key, { spec, push });
        push.start();
      }
      for (const p of plan.problems) {
        const id = `${p.key} ${p.error}`;
        if (entry.reported.has(id)) continue;
        entry.reported.add(id);
        info.log.warn({ ...targetFields(p.target), reason: p.error }, "multistream target skipped");
        this.raise(info, "multistream.error", p.target, p.error);
      }
    } catch (err) {
      // Observers must not throw into the session manager: the session goes on without
      // the change, and the operator sees why.
      info.log.error({ err }, "could not update the multistream pushes");
    }
  }

  private report(info: LiveSessionInfo, target: EventTarget, r: PushReport): void {
    if (r.kind === "connected") this.raise(info, "multistream.connected", target);
    else if (r.kind === "disconnected") this.raise(info, "multistream.disconnected", target);
    else this.raise(info, "multistream.error", target, r.reason);
  }

  private raise(info: LiveSessionInfo, name: Extract<EventName, `multistream.${string}`>, t: EventTarget, error?: string): void {
    // Another node holds the stream now: what this node's pushes do is not news any more.
    if (info.leaseLost()) return;
    // A copy: the payload is the target as it was when the event happened.
    const target = { id: t.id, name: t.name, profile: t.profile };
    try {
      // The sink logs a failure; a lost event must not stop the push.
      const raised =
        name === "multistream.error"
          ? this.deps.events.raise(name, info.streamId, { sessionId: info.sessionId, target, error: error ?? "unknown error" })
          : this.deps.events.raise(name, info.streamId, { sessionId: info.sessionId, target });
      raised.catch(() => undefined);
    } catch (err) {
      // The sink has logged it; a lost event must not stop the push.
      info.log.error({ err, event: name, targetId: t.id }, "could not raise a multistream event");
    }
  }
}

/**
 * Where Debian (and Ubuntu, Alpine) and Red Hat keep the system's CA bundle. GnuTLS builds of
 * ffmpeg (Debian's) fall back on the system store without one; OpenSSL builds verify nothing.
 */
const SYSTEM_CA_FILES = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"];

const targetFields = (t: EventTarget) => ({ targetId: t.id, targetName: t.name, profile: t.profile });
