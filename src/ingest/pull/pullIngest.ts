import type { Logger } from "../../log";
import { REMOTE_SCHEDULE, RestartLoop, spawnSupervised, type InputScripts, type ProcessEnd, type ProcessRegistry, type RestartMetrics, type SupervisedProcess } from "../../media";
import type { DestinationCheck } from "../../outbound";
import { parsePullSource, type PullConfig, type PullSource } from "../../shapes";
import type { BridgeTickets } from "../bridges";
import { buildPullArgs, inputAudioCodec, pullInput, pullTailLine } from "./pullArgs";
import { locationHost, RtspRelay } from "./rtspRelay";
import { SourceGateway, type GatewayPull, type GatewayRefusal, type GatewayStats } from "./sourceGateway";

/** What the pull ingest reads of a stream (the key index's stream records have it). */
export interface PulledStream {
  id: string;
  /** Its owner: their pulls and live streams count against MAX_LIVE_STREAMS_PER_USER together. */
  userId: string;
  streamKey: string | null;
  suspended: boolean;
  pull: PullConfig | null;
  /** Changed by start-pull: a pull waiting to retry starts at once. */
  pullRequestedAt: number | null;
}

/** The caps a pull is counted against before its ffmpeg starts. */
export interface PullCaps {
  /** MAX_LIVE_STREAMS_PER_USER: a user's live streams and running pulls together. */
  maxLivePerUser?: number;
  /** MAX_PULLS_PER_NODE: pull ffmpeg running on this node. */
  maxPullsPerNode?: number;
  /**
   * The streams of `userId` holding a live place on this node (open sessions and publishes
   * admitted): the session manager's admission count, shared.
   */
  liveStreamsOf(userId: string): ReadonlySet<string>;
}

export interface PullIngestDeps {
  /** The publishable streams (the key index, kept current by stream notices and reloads). */
  streams(): PulledStream[];
  tickets: BridgeTickets;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
  /** Where the source url and its options are written for ffmpeg (never its argv). */
  inputScripts: InputScripts;
  rtmpUrl(ticket: string): string;
  /** The outbound policy's verdict on a host, asked before every connection. */
  checkHost(host: string): Promise<DestinationCheck>;
  /** The node holding the stream's lease when it is another node (a cluster): this one does not pull it then. */
  liveElsewhere(streamId: string): Promise<string | undefined>;
  caps: PullCaps;
  metrics?: RestartMetrics;
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
  /** An attempt is under way (the policy, the lease, the caps, the gateway) without a process yet. */
  starting: boolean;
  /** Counted against the caps: from the caps' check to its ffmpeg's end. */
  holding: boolean;
  loop: RestartLoop;
  /** The source's audio is not AAC: transcode it (learnt from an attempt's stderr). */
  transcodeAudio: boolean;
  /** The quick restart after the audio codec was learnt. */
  timer: NodeJS.Timeout | undefined;
  /** When start-pull last skipped the back-off. */
  startedNowAt: number;
  /** Hosts whose refusal was logged (once per host, not on every retry). */
  refusalsLogged: Set<string>;
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

/** What one attempt set up before its ffmpeg, undone when it ends. */
interface Attempt {
  gateway?: GatewayPull;
  relay?: RtspRelay;
  script?: { args: string[]; remove(): Promise<void> };
  /** What the source led to that was refused; the attempt is ended for it. */
  refused?: string;
  proc?: SupervisedProcess;
}

const DEFAULT_IO_TIMEOUT_MS = 10_000;
/** start-pull skips the back-off at most this often per stream. */
const START_NOW_EVERY_MS = 1_000;

/** The service's environment without the proxy variables: ffmpeg talks only to loopback (the gateway, the relay) or a checked source. */
function pullEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ["no_proxy", "NO_PROXY", "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"]) delete env[k];
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

/** The source url with its host and port replaced by the RTSP relay's (user info, path and query kept). */
function viaRelay(source: string, port: number): string {
  const url = new URL(source);
  url.host = `127.0.0.1:${port}`;
  return url.href;
}

/**
 * Pull ingest: one ffmpeg per stream with a pull source, on each ingest node, reading the source
 * and republishing it to the local RTMP server under a bridge ticket; from there it is a session
 * like any other (protocol `pull`). While the stream is enabled, a pull that ends (the source
 * stopped, failed, or was refused) is started again by its restart loop (REMOTE_SCHEDULE: 1, 2,
 * 4 … 30 s; a run of 30 s or more starts the count over). Suspended, deleted and no-longer-pulled
 * streams' pulls are stopped; a changed source restarts the pull; start-pull starts a waiting one
 * now (at most once a second).
 *
 * A pull is counted before its ffmpeg starts: against its owner's live cap (their live streams
 * and their other pulls on this node) and this node's cap on pulls; over either, it waits.
 * ffmpeg reads an http(s) source only through the source gateway, an RTSP source only through a
 * relay that refuses redirects, and every source from a script, not its argv.
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
  private gateway: SourceGateway | undefined;

  constructor(private readonly deps: PullIngestDeps) {}

  start(): void {
    this.reconcile();
    this.timer = setInterval(() => this.reconcile(), this.deps.reconcileMs ?? 1000);
    this.timer.unref();
  }

  /** The stream's pull on this node, if it pulls it. */
  status(streamId: string): PullStatus | undefined {
    const p = this.pulls.get(streamId);
    if (!p) return undefined;
    const st = p.loop.status();
    // The loop keeps the why; the status says it as the log line does ("pull failed: …").
    return { running: p.process?.running ?? false, failures: st.failures, retryAt: st.retryAt, lastProblem: st.lastProblem && `pull ${st.lastProblem}` };
  }

  /** What the source gateway fetched and refused, once an http(s) pull started it. */
  get gatewayStats(): GatewayStats | undefined {
    return this.gateway && { ...this.gateway.stats };
  }

  /** Pull ffmpeg counted against the caps now (running, or about to start). */
  get holding(): number {
    return [...this.pulls.values()].filter((p) => p.holding).length;
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
      holding: false,
      loop: new RestartLoop({ kind: "pull", what: "pull", schedule: REMOTE_SCHEDULE, log: log.child({ source: parsed.source.redacted }), metrics: this.deps.metrics }),
      transcodeAudio: false,
      timer: undefined,
      startedNowAt: 0,
      refusalsLogged: new Set(),
    };
    this.pulls.set(stream.id, pull);
    log.info({ source: parsed.source.redacted }, "pulling the stream's source");
    void this.attempt(pull);
  }

  /** start-pull: a pull waiting to retry tries now, its failure count reset; a running one goes on. */
  private startNow(p: Pull): void {
    if (p.process?.running || p.starting) return;
    // A tenant calling start-pull in a loop gets at most one attempt a second past the back-off.
    if (Date.now() - p.startedNowAt < START_NOW_EVERY_MS) return;
    p.startedNowAt = Date.now();
    clearTimeout(p.timer);
    this.deps.log.info({ streamId: p.stream.id }, "start-pull: pulling now");
    p.loop.now(() => void this.attempt(p));
  }

  private current(p: Pull): boolean {
    return !this.closed && this.pulls.get(p.stream.id) === p;
  }

  /** The next attempt, once the back-off is over: the stream read afresh first (a suspend heard meanwhile stops the pull instead). */
  private retryLater(p: Pull, why: string, f: { ranForMs?: number; fields?: Record<string, unknown> } = {}): void {
    p.loop.failed(why, () => {
      this.reconcile();
      if (this.current(p) && !p.process && !p.starting) void this.attempt(p);
    }, f);
  }

  /** Why the caps keep this pull from starting now, or undefined: it may start (pure over the counts). */
  private overCap(p: Pull): string | undefined {
    const { caps } = this.deps;
    const others = [...this.pulls.values()].filter((o) => o !== p && o.holding);
    if (caps.maxPullsPerNode !== undefined && others.length >= caps.maxPullsPerNode) {
      return `waiting: this node runs ${others.length} pulls, the limit (MAX_PULLS_PER_NODE=${caps.maxPullsPerNode})`;
    }
    if (caps.maxLivePerUser !== undefined) {
      const { userId } = p.stream;
      const held = new Set(caps.liveStreamsOf(userId));
      for (const o of others) if (o.stream.userId === userId) held.add(o.stream.id);
      held.delete(p.stream.id);
      if (held.size >= caps.maxLivePerUser) {
        return `waiting: user ${userId} already has ${held.size} live streams and pulls, the limit (MAX_LIVE_STREAMS_PER_USER=${caps.maxLivePerUser})`;
      }
    }
    return undefined;
  }

  private async attempt(p: Pull): Promise<void> {
    const { deps } = this;
    if (!this.current(p) || !deps.ffmpegPath || p.process || p.holding) return;
    const log = deps.log.child({ streamId: p.stream.id, source: p.source.redacted });
    p.starting = true;
    let check: DestinationCheck;
    let holder: string | undefined;
    try {
      // The host checked again at every attempt: DNS may answer otherwise than when it was written.
      check = await deps.checkHost(p.source.host);
      holder = check.outcome === "allowed" ? await deps.liveElsewhere(p.stream.id) : undefined;
    } catch (err) {
      p.starting = false;
      if (this.current(p)) this.retryLater(p, "not started: could not look at the stream's lease", { fields: { err } });
      return;
    }
    p.starting = false;
    if (!this.current(p)) return;
    if (check.outcome !== "allowed") {
      const fields = check.outcome === "refused" ? { refused: check.detail } : { code: check.code };
      return this.retryLater(p, `not started: ${check.reason}`, { fields });
    }
    // Another node runs the stream's session (it pulls it, or a publisher pushes to it there).
    if (holder !== undefined) return this.retryLater(p, `not started: the stream is live on node ${holder}`);
    const cap = this.overCap(p);
    if (cap) return this.retryLater(p, cap);
    // Counted from here (synchronously after the check) until its ffmpeg ends.
    p.holding = true;
    p.starting = true;
    const attempt: Attempt = {};
    try {
      await this.prepare(p, attempt, check, log);
    } catch (err) {
      await this.undo(p, attempt);
      if (this.current(p)) this.retryLater(p, "not started: could not set up its input", { fields: { err } });
      return;
    } finally {
      p.starting = false;
    }
    if (!this.current(p)) return void this.undo(p, attempt);
    this.spawn(p, attempt, log);
  }

  /** The gateway or relay ffmpeg reads through, and the script naming it. */
  private async prepare(p: Pull, attempt: Attempt, check: Extract<DestinationCheck, { outcome: "allowed" }>, log: Logger): Promise<void> {
    const { pull } = p.stream;
    let url = pull!.source;
    const refused = (r: GatewayRefusal) => this.refused(p, attempt, log, r);
    if (p.source.scheme === "http" || p.source.scheme === "https") {
      if (this.closed) throw new Error("the pull ingest is closed");
      this.gateway ??= new SourceGateway({ check: (host) => this.deps.checkHost(host), log: this.deps.log.child({ component: "pull source gateway" }) });
      attempt.gateway = await this.gateway.open({ source: url, headers: pull!.headers ?? {}, onRefused: refused });
      url = attempt.gateway.url;
    } else if (p.source.scheme === "rtsp") {
      const relay = await RtspRelay.open({
        host: p.source.host,
        port: p.source.port ?? 554,
        addresses: check.addresses,
        onRedirect: (location) => {
          const host = locationHost(location);
          refused({ host, problem: `the RTSP source redirected to ${host}, which onair does not follow (RTSP redirects are refused)`, detail: "an RTSP 3xx" });
        },
      });
      attempt.relay = relay;
      url = viaRelay(url, relay.port);
    }
    const { input, before } = pullInput({ scheme: p.source.scheme, url, ioTimeoutMs: this.deps.ioTimeoutMs ?? DEFAULT_IO_TIMEOUT_MS });
    attempt.script = await this.deps.inputScripts.write(input, before);
  }

  /** The source led somewhere the gateway or relay refused: logged once per host, and the attempt ends (it is retried). */
  private refused(p: Pull, attempt: Attempt, log: Logger, r: GatewayRefusal): void {
    if (!p.refusalsLogged.has(r.host)) {
      p.refusalsLogged.add(r.host);
      log.warn({ host: r.host, refused: r.detail }, `the pull's source led to ${r.host}: refused (${r.problem})`);
    }
    attempt.refused ??= r.problem;
    attempt.proc?.kill();
  }

  private async undo(p: Pull, attempt: Attempt): Promise<void> {
    p.holding = false;
    attempt.gateway?.close();
    attempt.relay?.close();
    await attempt.script?.remove().catch(() => undefined);
  }

  private spawn(p: Pull, attempt: Attempt, log: Logger): void {
    const { deps } = this;
    const ticket = deps.tickets.issue({ streamKey: p.stream.streamKey!, protocol: "pull" });
    const started = Date.now();
    const stderr: string[] = [];
    const { pull } = p.stream;
    const args = buildPullArgs(attempt.script!.args, { audio: p.transcodeAudio ? "aac" : "copy", audioBitrate: deps.audioBitrate, outputUrl: deps.rtmpUrl(ticket) });
    // The source url, its password and query (either may hold credentials), the header values
    // and the gateway's credential are masked wherever ffmpeg's messages are logged.
    const secrets = [pull!.source, ...sourceSecrets(pull!.source), ...Object.values(pull!.headers ?? {}), ...(attempt.gateway ? [attempt.gateway.credential] : [])].filter((v) => v.length >= 4);
    const proc = spawnSupervised(deps.registry, {
      command: deps.ffmpegPath!,
      args,
      log,
      name: "ffmpeg pull",
      secrets,
      env: pullEnv(),
      // The input's description comes first; nothing after it is kept. An HLS source's
      // `Opening '<segment>'` lines come before it and say nothing of the input: not kept.
      onStderrLine: (line) => {
        if (stderr.length < 60 && pullTailLine(line) !== undefined) stderr.push(line);
      },
      tailLine: pullTailLine,
      tailLines: 20,
    });
    attempt.proc = proc;
    p.process = proc;
    // The ticket is in this ffmpeg's argv: only its own connection may redeem it.
    deps.tickets.bind(ticket, proc.pid);
    log.info({ pid: proc.pid, attempt: p.loop.failures + 1, audio: p.transcodeAudio ? "aac" : "copy" }, "pull starting");
    void proc.ended.then(async (end) => {
      deps.tickets.revoke(ticket);
      // The credential dies with its ffmpeg; the place it held is free.
      await this.undo(p, attempt);
      if (p.process === proc) p.process = undefined;
      if (end.requested && attempt.refused === undefined) return;
      // A suspend or delete ends the session first, which disconnects this publish: the key
      // index has heard of it by then, so the pull stops here rather than retrying.
      this.reconcile();
      // Stopped, or already started again (a start-pull heard in that reconcile).
      if (!this.current(p) || p.process || p.starting || p.holding) return;
      this.ended(p, log, end, stderr, Date.now() - started, attempt.refused);
    });
  }

  /** A run ended on its own: the source ended or failed, or what it led to was refused. */
  private ended(p: Pull, log: Logger, end: ProcessEnd, stderr: string[], ranForMs: number, refused: string | undefined): void {
    const audio = inputAudioCodec(stderr);
    if (refused === undefined && !p.transcodeAudio && audio !== undefined && audio !== "aac") {
      // FLV and the ingest take AAC only: the next run transcodes, at once (not a failure).
      p.transcodeAudio = true;
      log.info({ audio }, "the pull source's audio is not AAC: transcoding it to AAC from now on");
      p.timer = setTimeout(() => void this.attempt(p), 200);
      return;
    }
    const why = refused !== undefined ? `failed: ${refused}` : end.code === 0 ? "ended: the source ended" : "failed";
    this.retryLater(p, why, { ranForMs, fields: { code: end.code, signal: end.signal, ...(end.code === 0 || refused ? {} : { stderrTail: end.stderrTail.slice(-5) }) } });
  }

  private remove(streamId: string, why: string): void {
    const p = this.pulls.get(streamId);
    if (!p) return;
    this.pulls.delete(streamId);
    clearTimeout(p.timer);
    p.loop.cancel();
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
    await this.gateway?.close();
  }
}
