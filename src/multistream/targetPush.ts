import type { Logger } from "../log";
import { spawnSupervised, type ProcessEnd, type ProcessRegistry, type SupervisedProcess } from "../media";
import type { DestinationCheck, OutboundPolicy } from "../outbound";
import type { EventTarget } from "../shapes";
import { failuresAfter, retryDelayMs } from "./backoff";
import { describePushFailure, redactDestination } from "./failure";
import { buildPushArgs, progressShowsMedia, type PushInput } from "./pushArgs";
import { parseTargetUrl, withAddress, type TargetUrl } from "./targetUrl";

/** What a push tells its owner, which raises the multistream.* events. */
export type PushReport = { kind: "connected" } | { kind: "error"; reason: string } | { kind: "disconnected" };

export interface TargetPushOptions {
  target: EventTarget;
  /** Secret: holds the destination's stream key. Never logged, never reported. */
  url: string;
  /** rtmps: verify the destination's certificate against `caFile`. */
  tlsVerify: boolean;
  caFile: string | undefined;
  videoOnly: boolean;
  input: PushInput;
  /** Asked before every ffmpeg start: the destination may resolve elsewhere since the last. */
  policy: OutboundPolicy;
  ffmpegPath: string;
  registry: ProcessRegistry;
  /** Already carries the stream, session and target. */
  log: Logger;
  report(r: PushReport): void;
}

type State = "running" | "ending" | "stopped";

/**
 * One target's push for one live session: a supervised ffmpeg, restarted with back-off after
 * a failure for as long as the session is live. Connected when media goes out; every
 * `connected` is followed by exactly one `disconnected`. A failure is reported as `error` once
 * per reason until the push connects again (every attempt is logged), so a destination that
 * stays down does not flood webhooks.
 */
export class TargetPush {
  private state: State = "running";
  private process: SupervisedProcess | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private connectedAt: number | undefined;
  private failures = 0;
  private attempts = 0;
  private lastReported: string | undefined;
  /** The outbound policy is being asked: an attempt is under way without a process yet. */
  private checking = false;
  /** The url ffmpeg was last given, when it differs from the target's (an srt address put in). */
  private pinnedUrl: string | undefined;
  private readonly processLog: Logger;
  private markClosed!: () => void;
  /** Resolves once the push is over: no process, no retry pending, its events reported. */
  readonly closed = new Promise<void>((resolve) => (this.markClosed = resolve));

  constructor(private readonly o: TargetPushOptions) {
    // The supervisor logs the command line (debug) and the stderr tail of a failure: both
    // hold the url, so they are redacted on their way out (and the local source's url, whose
    // path is the stream's own key).
    const source = o.input.kind === "source" ? o.input.url : undefined;
    const redact = (s: string) => {
      let out = s;
      for (const secret of [this.pinnedUrl, o.url, source]) if (secret) out = redactDestination(out, secret);
      return out;
    };
    this.processLog = o.log.child({}, { serializers: { args: (v: string) => redact(String(v)), stderrTail: (v: string[]) => v.map(redact) } });
  }

  get target(): EventTarget {
    return this.o.target;
  }

  get connected(): boolean {
    return this.connectedAt !== undefined;
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** A renamed target keeps pushing; later events carry the new name. */
  rename(name: string): void {
    this.o.target.name = name;
  }

  start(): void {
    this.attempt();
  }

  /**
   * The session ended: its media ends too, and ffmpeg exits by itself once it has sent what
   * its input still held (a rendition push is about a segment behind the live edge). Stopped
   * after `drainMs` if it has not. No retry from now on.
   */
  finish(drainMs: number): Promise<void> {
    if (this.state !== "running") return this.closed;
    this.state = "ending";
    this.cancelRetry();
    const p = this.process;
    if (p) {
      const timer = setTimeout(() => void p.stop(2000), drainMs);
      void p.ended.finally(() => clearTimeout(timer));
    }
    this.settle();
    return this.closed;
  }

  /** Stops at once (reference removed, target disabled or changed). */
  stop(graceMs = 2000): Promise<void> {
    if (this.state === "stopped") return this.closed;
    this.state = "stopped";
    this.cancelRetry();
    void this.process?.stop(graceMs);
    this.settle();
    return this.closed;
  }

  private attempt(): void {
    this.retryTimer = undefined;
    if (this.state !== "running") return;
    this.attempts++;
    const parsed = parseTargetUrl(this.o.url);
    if (!parsed.ok) {
      // Stored before urls were checked this closely: never handed to ffmpeg.
      const reason = `the target's url is not accepted: it ${parsed.error}; give the target a new url`;
      this.o.log.error({ attempt: this.attempts, reason }, "multistream push failed: not retrying");
      this.o.report({ kind: "error", reason });
      this.state = "stopped";
      this.settle();
      return;
    }
    this.checking = true;
    void this.o.policy
      .check(parsed.url.host)
      .then((check) => {
        this.checking = false;
        if (this.state !== "running") return this.settle();
        if (check.outcome === "allowed") this.launch(parsed.url, check.addresses[0]!.address);
        else this.refused(check);
      })
      .catch((err: unknown) => {
        // Not expected (the check never throws): the push must neither hang nor stop for it.
        this.checking = false;
        this.o.log.error({ err, attempt: this.attempts }, "multistream push could not start: retrying");
        if (this.state !== "running") return this.settle();
        this.failures = failuresAfter(this.failures, undefined);
        this.retryTimer = setTimeout(() => this.attempt(), retryDelayMs(this.failures));
      });
  }

  /**
   * ffmpeg starts right after the outbound policy allowed the destination. For srt the checked
   * address itself goes into the url: SRT makes no use of the host name. rtmp(s) keeps the name,
   * since TLS needs it for SNI and the certificate check, and RTMP sends it in tcUrl, which
   * ingest services route on; so ffmpeg resolves it once more, a few milliseconds after the
   * check. A name that answers public then private within that window (DNS rebinding with a
   * zero TTL) could still reach a private address: accepted, because what it reaches is an RTMP
   * handshake of random bytes, not a request of the user's choosing, nothing of the answer comes
   * back but a connection failure, and every retry is checked again and backs off to 30 s.
   */
  private launch(url: TargetUrl, address: string): void {
    const destination = url.scheme === "srt" && url.hostKind === "name" ? withAddress(url, address) : url.canonical;
    this.pinnedUrl = destination === url.canonical ? undefined : destination;
    const p = spawnSupervised(this.o.registry, {
      command: this.o.ffmpegPath,
      args: buildPushArgs({ input: this.o.input, destination, videoOnly: this.o.videoOnly, tlsVerify: this.o.tlsVerify, caFile: this.o.caFile }),
      log: this.processLog,
      name: "ffmpeg push",
      onStdoutLine: (line) => {
        if (this.process === p && this.connectedAt === undefined && progressShowsMedia(line)) this.becameConnected();
      },
      tailLines: 20,
    });
    this.process = p;
    this.o.log.info({ attempt: this.attempts, pid: p.pid }, "multistream push starting");
    void p.ended.then((end) => this.exited(p, end));
  }

  /** Refused by the outbound policy, or not resolved: nothing was started; tried again later. */
  private refused(check: Exclude<DestinationCheck, { outcome: "allowed" }>): void {
    this.failures = failuresAfter(this.failures, undefined);
    const retryInMs = retryDelayMs(this.failures);
    const fields = { attempt: this.attempts, failuresInARow: this.failures, reason: check.reason, retryInMs };
    if (check.outcome === "refused") this.o.log.warn({ ...fields, refused: check.detail }, "multistream push refused by the outbound policy: retrying");
    else this.o.log.warn({ ...fields, code: check.code }, "multistream push failed: retrying");
    if (check.reason !== this.lastReported) {
      this.lastReported = check.reason;
      this.o.report({ kind: "error", reason: check.reason });
    }
    this.retryTimer = setTimeout(() => this.attempt(), retryInMs);
  }

  private becameConnected(): void {
    this.connectedAt = Date.now();
    this.lastReported = undefined;
    this.o.log.info({ attempt: this.attempts }, "multistream push connected: the destination takes media");
    this.o.report({ kind: "connected" });
  }

  private exited(p: SupervisedProcess, end: ProcessEnd): void {
    if (this.process === p) this.process = undefined;
    const connectedForMs = this.connectedAt === undefined ? undefined : Date.now() - this.connectedAt;
    this.connectedAt = undefined;
    const wasConnected = connectedForMs !== undefined;

    if (this.state !== "running" || end.requested) {
      // We stopped it, or the session ended and it sent what was left.
      this.o.log.info({ connectedForMs, code: end.code }, "multistream push stopped");
      if (wasConnected) this.o.report({ kind: "disconnected" });
      this.settle();
      return;
    }

    this.failures = failuresAfter(this.failures, connectedForMs);
    const retryInMs = retryDelayMs(this.failures);
    if (end.code === 0) {
      // Its input ended: the publisher left and the session is ending (sessionEnded follows
      // and cancels the retry). Not the destination's fault, so not an error.
      this.o.log.info({ connectedForMs, retryInMs }, "multistream push input ended");
      if (wasConnected) this.o.report({ kind: "disconnected" });
    } else {
      const failure = describePushFailure(end.stderrTail, this.o.url, { connected: wasConnected, code: end.code, signal: end.signal });
      const fields = { attempt: this.attempts, failuresInARow: this.failures, reason: failure.reason, connectedForMs };
      if (failure.permanent) this.o.log.error(fields, "multistream push failed: not retrying");
      else this.o.log.warn({ ...fields, retryInMs }, "multistream push failed: retrying");
      if (failure.reason !== this.lastReported) {
        this.lastReported = failure.reason;
        this.o.report({ kind: "error", reason: failure.reason });
      }
      if (wasConnected) this.o.report({ kind: "disconnected" });
      if (failure.permanent) {
        this.state = "stopped";
        this.settle();
        return;
      }
    }
    this.retryTimer = setTimeout(() => this.attempt(), retryInMs);
  }

  private cancelRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  private settle(): void {
    if (this.state !== "running" && !this.process && !this.retryTimer && !this.checking) this.markClosed();
  }
}
