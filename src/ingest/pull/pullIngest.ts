import type { Logger } from "../../log";
import { spawnSupervised, type ProcessEnd, type ProcessRegistry, type SupervisedProcess } from "../../media";
import { ForwardProxy, HOW_TO_ALLOW, type DestinationCheck, type ForwardProxyStats } from "../../outbound";
import { parsePullSource, type PullConfig, type PullSource } from "../../shapes";
import type { BridgeTickets } from "../bridges";
import { buildPullArgs, inputAudioCodec, policyRefusal, pullTailLine } from "./pullArgs";

/** What the pull ingest reads of a stream (the key index's stream records have it). */
export interface PulledStream {
  id: string;
  streamKey: string | null;
  suspended: boolean;
  pull: PullConfig | null;
  /** Changed by start-pull: a pull waiting to retry starts at once. */
  pullRequestedAt: number | null;
}

/** The retry schedule (the multistream pushes' back-off, handed in: src/multistream sits above ingest). */
export interface PullBackoff {
  /** The wait before the next attempt after `failures` failures in a row. */
  delayMs(failures: number): number;
  /** Failures in a row after an attempt that ran `ranForMs` (a long run starts the count over). */
  failuresAfter(previous: number, ranForMs: number | undefined): number;
}

export interface PullIngestDeps {
  /** The publishable streams (the key index, kept current by stream notices and reloads). */
  streams(): PulledStream[];
  tickets: BridgeTickets;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
  rtmpUrl(ticket: string): string;
  /** The outbound policy's verdict on a source's host, asked before every connection. */
  checkHost(host: string): Promise<DestinationCheck>;
  /** The node holding the stream's lease when it is another node (a cluster): this one does not pull it then. */
  liveElsewhere(streamId: string): Promise<string | undefined>;
  backoff: PullBackoff;
  log: Logger;
  /** A source that sends nothing for this long ends the attempt, ms (default 10 s). */
  ioTimeoutMs?: number;
  /** AAC bitrate when a source's audio is transcoded, bits per second. */
  audioBitrate: number;
  /** How often the pulls are compared with the streams, ms. */
  reconcileMs?: number;
}

interface Pull {
  stream: PulledStream;
  /** The stream's pull config as JSON: a change restarts the pull. */
  config: string;
  source: PullSource;
  process: SupervisedProcess | undefined;
  /** An attempt is under way (the policy or the lease being asked) without a process yet. */
  starting: boolean;
  failures: number;
  /** The source's audio is not AAC: transcode it (learnt from an attempt's stderr). */
  transcodeAudio: boolean;
  timer: NodeJS.Timeout | undefined;
  /** When the next attempt is due (while waiting), for logs and start-pull. */
  retryAt: number | undefined;
  /** Why the last attempt ended or did not start. */
  lastProblem: string | undefined;
}

/** A pull as the operator (and tests) see it. */
export interface PullStatus {
  running: boolean;
  /** Attempts that failed in a row. */
  failures: number;
  /** When the next attempt is due, while waiting. */
  retryAt: number | undefined;
  lastProblem: string | undefined;
}

const DEFAULT_IO_TIMEOUT_MS = 10_000;

/** The service's environment without no_proxy, which would send the hosts it names around the forward proxy. */
function pullEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.no_proxy;
  delete env.NO_PROXY;
  return env;
}

/** The parts of a source url that may be credentials: its password (as written and decoded) and query. */
function sourceSecrets(source: string): string[] {
  try {
    const url = new URL(source);
    // The path too: an RTMP source's stream key, a signed HLS or RTSP path.
    const path = url.pathname.length > 1 ? [url.pathname.slice(1), safeDecode(url.pathname.slice(1))] : [];
    return [url.password, safeDecode(url.password), url.search.slice(1), ...path];
  } catch {
    return [];
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Pull ingest: one ffmpeg per stream with a pull source, on each ingest node, reading the source
 * and republishing it to the local RTMP server under a bridge ticket; from there it is a session
 * like any other (protocol `pull`). While the stream is enabled, a pull that ends (the source
 * stopped, failed, or was refused) is started again after the multistream back-off (1, 2, 4 … 30 s;
 * a run of 30 s or more starts the count over). Suspended, deleted and no-longer-pulled streams'
 * pulls are stopped; a changed source restarts the pull; start-pull starts a waiting one now.
 *
 * In a cluster every ingest node reconciles the same streams, and one node's lease admits a
 * stream's session: a node sees the lease held by another before it connects to the source and
 * backs off (and were two to connect at once, the second's publish is refused at admission and
 * it backs off all the same). The pull therefore runs on one node, and moves to another within
 * a back-off when that node dies and its leases run out.
 */
export class PullIngest {
  private readonly pulls = new Map<string, Pull>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Every request of an http(s) pull goes through it: started with the first such pull. */
  private proxy: ForwardProxy | undefined;

  constructor(private readonly deps: PullIngestDeps) {}

  start(): void {
    this.reconcile();
    this.timer = setInterval(() => this.reconcile(), this.deps.reconcileMs ?? 1000);
    this.timer.unref();
  }

  /** The stream's pull on this node, if it pulls it. */
  status(streamId: string): PullStatus | undefined {
    const p = this.pulls.get(streamId);
    return p && { running: p.process?.running ?? false, failures: p.failures, retryAt: p.retryAt, lastProblem: p.lastProblem };
  }

  /** What the forward proxy allowed and refused, once an http(s) pull started it. */
  get proxyStats(): ForwardProxyStats | undefined {
    return this.proxy && { ...this.proxy.stats };
  }

  private proxyUrl(): Promise<string> {
    if (this.closed) return Promise.reject(new Error("the pull ingest is closed"));
    this.proxy ??= new ForwardProxy({ check: (host) => this.deps.checkHost(host), log: this.deps.log.child({ component: "pull forward proxy" }) });
    return this.proxy.url();
  }

  /** Starts the pulls streams need, stops those no longer wanted, restarts changed ones. */
  reconcile(): void {
    if (this.closed) return;
    const wanted = new Map<string, PulledStream>();
    for (const s of this.deps.streams()) if (s.pull && s.streamKey && !s.suspended) wanted.set(s.id, s);
    for (const [id, p] of this.pulls) {
      const w = wanted.get(id);
      if (!w || JSON.stringify(w.pull) !== p.config || w.streamKey !== p.stream.streamKey) this.remove(id, w ? "its pull source changed" : "the stream is no longer pulled");
      else if (w.pullRequestedAt !== p.stream.pullRequestedAt) {
        p.stream = w;
        this.startNow(p);
      }
    }
    for (const [id, s] of wanted) if (!this.pulls.has(id)) this.add(s);
  }

  private add(stream: PulledStream): void {
    const log = this.deps.log.child({ streamId: stream.id });
    const parsed = parsePullSource(stream.pull!.source);
    if (!parsed.ok) {
      // Checked as written: only a row from elsewhere gets here. Never handed to ffmpeg.
      log.error({ reason: parsed.error }, "the stream's pull source is not accepted: not pulling it");
      return;
    }
    const pull: Pull = {
      stream,
      config: JSON.stringify(stream.pull),
      source: parsed.source,
      process: undefined,
      starting: false,
      failures: 0,
      transcodeAudio: false,
      timer: undefined,
      retryAt: undefined,
      lastProblem: undefined,
    };
    this.pulls.set(stream.id, pull);
    log.info({ source: parsed.source.redacted }, "pulling the stream's source");
    void this.attempt(pull);
  }

  /** start-pull: a pull waiting to retry tries now, its failure count reset; a running one goes on. */
  private startNow(p: Pull): void {
    if (p.process?.running || p.starting) return;
    clearTimeout(p.timer);
    p.failures = 0;
    this.deps.log.info({ streamId: p.stream.id }, "start-pull: pulling now");
    void this.attempt(p);
  }

  private current(p: Pull): boolean {
    return !this.closed && this.pulls.get(p.stream.id) === p;
  }

  private async attempt(p: Pull): Promise<void> {
    const { deps } = this;
    p.timer = undefined;
    p.retryAt = undefined;
    if (!this.current(p) || !deps.ffmpegPath) return;
    const log = deps.log.child({ streamId: p.stream.id, source: p.source.redacted });
    p.starting = true;
    let check: DestinationCheck;
    let holder: string | undefined;
    let httpProxy: string | undefined;
    try {
      // The host checked again at every connection: DNS may answer otherwise than when it was written.
      check = await deps.checkHost(p.source.host);
      holder = check.outcome === "allowed" ? await deps.liveElsewhere(p.stream.id) : undefined;
      const http = p.source.scheme === "http" || p.source.scheme === "https";
      httpProxy = http && check.outcome === "allowed" && holder === undefined ? await this.proxyUrl() : undefined;
    } catch (err) {
      if (this.current(p)) this.retry(p, log, undefined, "could not look at the stream's lease or start the forward proxy", { err });
      return;
    } finally {
      p.starting = false;
    }
    if (!this.current(p)) return;
    if (check.outcome !== "allowed") {
      const fields = check.outcome === "refused" ? { refused: check.detail } : { code: check.code };
      return this.retry(p, log, undefined, `pull not started: ${check.reason}`, fields);
    }
    // Another node runs the stream's session (it pulls it, or a publisher pushes to it there).
    if (holder !== undefined) return this.retry(p, log, undefined, `pull not started: the stream is live on node ${holder}`, {});

    const ticket = deps.tickets.issue({ streamKey: p.stream.streamKey!, protocol: "pull" });
    const started = Date.now();
    const stderr: string[] = [];
    const { pull } = p.stream;
    const args = buildPullArgs({
      source: pull!.source,
      scheme: p.source.scheme,
      headers: pull!.headers,
      httpProxy,
      audio: p.transcodeAudio ? "aac" : "copy",
      audioBitrate: deps.audioBitrate,
      ioTimeoutMs: deps.ioTimeoutMs ?? DEFAULT_IO_TIMEOUT_MS,
      outputUrl: deps.rtmpUrl(ticket),
    });
    // The source url, its password and query (either may hold credentials) and the header values
    // are masked wherever the args or ffmpeg's messages are logged.
    const secrets = [pull!.source, ...sourceSecrets(pull!.source), ...Object.values(pull!.headers ?? {})].filter((v) => v.length >= 4);
    // A host a redirect or playlist led to, which the forward proxy refused (ffmpeg's words).
    let refused: string | undefined;
    /** Stopped here for what its stderr showed: ended like a failure, not like a requested stop. */
    let policyStop = false;
    const proc = spawnSupervised(deps.registry, {
      command: deps.ffmpegPath,
      args,
      log,
      name: "ffmpeg pull",
      secrets,
      env: pullEnv(),
      // The input's description comes first; nothing after it is kept. An HLS source's
      // `Opening '<segment>'` lines come before it and say nothing of the input: not kept.
      onStderrLine: (line) => {
        const refusal = refused === undefined ? policyRefusal(line) : undefined;
        if (refusal) {
          refused = refusal.what;
          if (refusal.stop) {
            policyStop = true;
            proc.kill();
          }
        }
        if (stderr.length < 60 && pullTailLine(line) !== undefined) stderr.push(line);
      },
      tailLine: pullTailLine,
      tailLines: 20,
    });
    p.process = proc;
    log.info({ pid: proc.pid, attempt: p.failures + 1, audio: p.transcodeAudio ? "aac" : "copy" }, "pull starting");
    void proc.ended.then((end) => {
      deps.tickets.revoke(ticket);
      if (p.process === proc) p.process = undefined;
      if (end.requested && !policyStop) return;
      // A suspend or delete ends the session first, which disconnects this publish: the key
      // index has heard of it by then, so the pull stops here rather than retrying.
      this.reconcile();
      // Stopped, or already started again (a start-pull heard in that reconcile).
      if (!this.current(p) || p.process || p.starting) return;
      this.ended(p, log, end, stderr, Date.now() - started, refused);
    });
  }

  /** A run ended on its own: the source ended or failed, or the ingest refused it. */
  private ended(p: Pull, log: Logger, end: ProcessEnd, stderr: string[], ranForMs: number, refused: string | undefined): void {
    const audio = inputAudioCodec(stderr);
    if (!p.transcodeAudio && audio !== undefined && audio !== "aac") {
      // FLV and the ingest take AAC only: the next run transcodes, at once (not a failure).
      p.transcodeAudio = true;
      log.info({ audio }, "the pull source's audio is not AAC: transcoding it to AAC from now on");
      p.timer = setTimeout(() => void this.attempt(p), 200);
      return;
    }
    const why = end.code === 0 ? "the pull source ended" : "the pull failed";
    // The source itself was allowed; what it pointed to was not (the proxy logged which address).
    const also = refused === undefined ? "" : `: the source led to ${refused}, refused by the outbound policy (${HOW_TO_ALLOW})`;
    this.retry(p, log, ranForMs, why + also, { code: end.code, signal: end.signal, ranForMs, ...(end.code === 0 ? {} : { stderrTail: end.stderrTail.slice(-5) }) });
  }

  private retry(p: Pull, log: Logger, ranForMs: number | undefined, why: string, fields: Record<string, unknown>): void {
    p.failures = this.deps.backoff.failuresAfter(p.failures, ranForMs);
    const retryInMs = this.deps.backoff.delayMs(p.failures);
    p.retryAt = Date.now() + retryInMs;
    p.lastProblem = why;
    log.warn({ ...fields, failuresInARow: p.failures, retryInMs }, `${why}: retrying`);
    p.timer = setTimeout(() => {
      // Read the stream afresh first: a suspend heard meanwhile stops the pull instead.
      this.reconcile();
      if (this.current(p) && !p.process && !p.starting) void this.attempt(p);
    }, retryInMs);
  }

  private remove(streamId: string, why: string): void {
    const p = this.pulls.get(streamId);
    if (!p) return;
    this.pulls.delete(streamId);
    clearTimeout(p.timer);
    this.deps.log.info({ streamId, why }, "pull stopped");
    void p.process?.stop(2000);
  }

  /** Stops every pull and waits for their processes. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    const running = [...this.pulls.values()].map((p) => p.process);
    for (const id of [...this.pulls.keys()]) this.remove(id, "shutdown");
    await Promise.all(running.map((p) => p?.ended));
    await this.proxy?.close();
  }
}
