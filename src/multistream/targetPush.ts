import fs from "node:fs";
import type { Logger } from "../log";
import { REMOTE_SCHEDULE, RestartLoop, type ProcessRegistry, type RestartMetrics } from "../media";
import type { DestinationCheck, OutboundPolicy } from "../outbound";
import type { EventTarget } from "../shapes";
import { redactDestination } from "./failure";
import { relayedByOnair, type PushInput } from "./pushArgs";
import { DirectPush, RelayPush, rtmpDestination, type AttemptEnd, type PushAttempt } from "./relay";
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
  /** Asked before every attempt: the destination may resolve elsewhere since the last. */
  policy: OutboundPolicy;
  ffmpegPath: string;
  registry: ProcessRegistry;
  /** Already carries the stream, session and target. */
  log: Logger;
  /** onair_restarts_total{kind="multistream_push"}. */
  metrics?: RestartMetrics;
  report(r: PushReport): void;
}

type State = "running" | "ending" | "stopped";

/**
 * One target's push for one live session, restarted with back-off (the shared RestartLoop,
 * REMOTE_SCHEDULE) after a failure for as long as the session is live. rtmp and rtmps
 * destinations are published to by onair itself from an ffmpeg that reads the input
 * (RelayPush); srt, and rtmp with credentials, by ffmpeg (DirectPush). Connected when media goes
 * out; every `connected` is followed by exactly one `disconnected`. A failure is reported as
 * `error` once per reason until the push connects again (every attempt is logged), so a
 * destination that stays down does not flood webhooks.
 */
export class TargetPush {
  private state: State = "running";
  private current: PushAttempt | undefined;
  private connectedAt: number | undefined;
  private attempts = 0;
  private lastReported: string | undefined;
  /** The outbound policy is being asked: an attempt is under way without a process yet. */
  private checking = false;
  /** The url ffmpeg was last given, when it differs from the target's (an srt address put in). */
  private pinnedUrl: string | undefined;
  private readonly processLog: Logger;
  private readonly restarts: RestartLoop;
  private ca: Buffer | undefined;
  private markClosed!: () => void;
  /** Resolves once the push is over: no process, no retry pending, its events reported. */
  readonly closed = new Promise<void>((resolve) => (this.markClosed = resolve));

  constructor(private readonly o: TargetPushOptions) {
    // The supervisor logs the command line (debug) and the stderr tail of a failure: both
    // may hold the url, so they are redacted on their way out. A source push reads its stdin:
    // no url of the stream is anywhere in its argv.
    const redact = (s: string) => {
      let out = s;
      for (const secret of [this.pinnedUrl, o.url]) if (secret) out = redactDestination(out, secret);
      return out;
    };
    this.processLog = o.log.child({}, { serializers: { args: (v: string) => redact(String(v)), stderrTail: (v: string[]) => v.map(redact) } });
    this.restarts = new RestartLoop({ kind: "multistream_push", what: "multistream push", schedule: REMOTE_SCHEDULE, log: o.log, metrics: o.metrics });
  }

  get target(): EventTarget {
    return this.o.target;
  }

  get connected(): boolean {
    return this.connectedAt !== undefined;
  }

  /** The push's ffmpeg, while one runs. */
  get pid(): number | undefined {
    return this.current?.pid;
  }

  /** A renamed target keeps pushing; later events carry the new name. */
  rename(name: string): void {
    this.o.target.name = name;
  }

  start(): void {
    this.attempt();
  }

  /**
   * The session ended: its media ends too, and the push ends by itself once it has sent what
   * its input still held (a rendition push is about a segment behind the live edge). Stopped
   * after `drainMs` if it has not. No retry from now on.
   */
  finish(drainMs: number): Promise<void> {
    if (this.state !== "running") return this.closed;
    this.state = "ending";
    this.restarts.cancel();
    this.current?.finish(drainMs);
    this.settle();
    return this.closed;
  }

  /** Stops at once (reference removed, target disabled or changed). */
  stop(graceMs = 2000): Promise<void> {
    if (this.state === "stopped") return this.closed;
    this.state = "stopped";
    this.restarts.cancel();
    this.current?.stop(graceMs);
    this.settle();
    return this.closed;
  }

  private attempt(): void {
    if (this.state !== "running") return;
    this.attempts++;
    const parsed = parseTargetUrl(this.o.url);
    if (!parsed.ok) {
      // Stored before urls were checked this closely: never handed to ffmpeg.
      const reason = `the target's url is not accepted: it ${parsed.error}; give the target a new url`;
      this.restarts.failed("failed", () => this.attempt(), { permanent: true, fields: { attempt: this.attempts, reason } });
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
        if (this.state !== "running") return this.settle();
        this.restarts.failed("could not start", () => this.attempt(), { fields: { err, attempt: this.attempts } });
      });
  }

  /**
   * Right after the outbound policy allowed the destination, and to the address it checked.
   * rtmp(s): onair's own client connects to that address (no second lookup), sending the host
   * name as TLS's SNI and certificate name and in RTMP's tcUrl, which ingest services route on.
   * srt: the address goes into ffmpeg's url (SRT makes no use of the name). rtmp with
   * credentials stays with ffmpeg, which resolves the name once more a few milliseconds after
   * the check (DNS rebinding with a zero TTL could then reach a private address; what it reaches
   * is an RTMP handshake of random bytes, nothing comes back but a failure, and every retry is
   * checked again and backs off to 30 s).
   */
  private launch(url: TargetUrl, address: string): void {
    const common = {
      input: this.o.input,
      videoOnly: this.o.videoOnly,
      ffmpegPath: this.o.ffmpegPath,
      registry: this.o.registry,
      processLog: this.processLog,
      url: this.o.url,
      onConnected: () => {
        if (this.current === attempt) this.becameConnected();
      },
    };
    let attempt: PushAttempt;
    if (relayedByOnair(url)) {
      this.pinnedUrl = undefined;
      attempt = new RelayPush(common, rtmpDestination(url, address, { verify: this.o.tlsVerify, ...(this.caBundle() ? { ca: this.caBundle() } : {}) }));
    } else {
      const destination = url.scheme === "srt" && url.hostKind === "name" ? withAddress(url, address) : url.canonical;
      this.pinnedUrl = destination === url.canonical ? undefined : destination;
      attempt = new DirectPush({ ...common, destination, tlsVerify: this.o.tlsVerify, caFile: this.o.caFile });
    }
    this.current = attempt;
    this.o.log.info({ attempt: this.attempts, via: relayedByOnair(url) ? "onair" : "ffmpeg", pid: attempt.pid }, "multistream push starting");
    void attempt.ended.then((end) => this.ended(attempt, end));
  }

  /** The CA bundle rtmps certificates are verified against (the same file ffmpeg was given), read once. */
  private caBundle(): Buffer | undefined {
    if (this.ca === undefined && this.o.caFile) {
      try {
        this.ca = fs.readFileSync(this.o.caFile);
      } catch (err) {
        // Node's own CA store then: the certificate is still verified.
        this.o.log.warn({ err, caFile: this.o.caFile }, "could not read the CA bundle: verifying against Node's");
        this.o.caFile = undefined;
      }
    }
    return this.ca;
  }

  /** Refused by the outbound policy, or not resolved: nothing was started; tried again later. */
  private refused(check: Exclude<DestinationCheck, { outcome: "allowed" }>): void {
    const fields = { attempt: this.attempts, reason: check.reason, ...(check.outcome === "refused" ? { refused: check.detail } : { code: check.code }) };
    this.restarts.failed(check.outcome === "refused" ? "refused by the outbound policy" : "failed", () => this.attempt(), { fields });
    if (check.reason !== this.lastReported) {
      this.lastReported = check.reason;
      this.o.report({ kind: "error", reason: check.reason });
    }
  }

  private becameConnected(): void {
    this.connectedAt = Date.now();
    this.lastReported = undefined;
    this.o.log.info({ attempt: this.attempts }, "multistream push connected: the destination takes media");
    this.o.report({ kind: "connected" });
  }

  private ended(attempt: PushAttempt, end: AttemptEnd): void {
    if (this.current === attempt) this.current = undefined;
    const connectedForMs = this.connectedAt === undefined ? undefined : Date.now() - this.connectedAt;
    this.connectedAt = undefined;
    const wasConnected = connectedForMs !== undefined;

    if (this.state !== "running" || end.requested) {
      // We stopped it, or the session ended and it sent what was left.
      this.o.log.info({ connectedForMs }, "multistream push stopped");
      if (wasConnected) this.o.report({ kind: "disconnected" });
      this.settle();
      return;
    }
    const next = () => this.attempt();
    if (end.inputEnded || !end.failure) {
      // Its input ended: the publisher left and the session is ending (sessionEnded follows
      // and cancels the retry). Not the destination's fault, so not an error.
      this.restarts.failed("input ended", next, { ranForMs: connectedForMs, expected: true, fields: { connectedForMs } });
      if (wasConnected) this.o.report({ kind: "disconnected" });
      return;
    }
    const failure = end.failure;
    const retrying = this.restarts.failed("failed", next, { ranForMs: connectedForMs, permanent: failure.permanent, fields: { attempt: this.attempts, reason: failure.reason, connectedForMs } });
    if (failure.reason !== this.lastReported) {
      this.lastReported = failure.reason;
      this.o.report({ kind: "error", reason: failure.reason });
    }
    if (wasConnected) this.o.report({ kind: "disconnected" });
    if (retrying === undefined) {
      this.state = "stopped";
      this.settle();
    }
  }

  private settle(): void {
    if (this.state !== "running" && !this.current && !this.restarts.pending && !this.checking) this.markClosed();
  }
}
