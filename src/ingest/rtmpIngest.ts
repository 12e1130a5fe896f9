import { randomBytes } from "node:crypto";
import type { Logger } from "../log";
import { RtmpServer, type PlayDecision, type PlayRequest, type PublishDecision, type PublishedMedia, type PublishRequest, type RtmpServerConnection } from "../rtmp";
import { audioForPipeline, otherVideoTracks, videoForPipeline } from "./flvForm";
import { refuseAudio, refuseVideo } from "./mediaCheck";
import { PublishStats, type PublishStatsView } from "./publishStats";
import { LiveSource, type SourceReader } from "./liveSource";
import type { BridgeTickets } from "./bridges";
import { refusePublish, type IngestProtocol, type PublishRefusal, type SourceTrack } from "../shapes";

// onair's RTMP ingest on its own RTMP server (src/rtmp): encoders publish to
// `/live/<stream key>`; an admitted publish goes on under the stream's internal name, under
// which the pipeline's ffmpeg and source pushes read it through pipes (`read`); nothing plays
// it over RTMP. Admission is synchronous (the stream keys are in memory), so a refused encoder
// gets its RTMP status before NetStream.Publish.Start: OBS shows the reason instead of
// retrying a dropped connection.

export const INGEST_APP = "live";

/** A connection that does not publish by then is dropped (garbage, port scans). */
const IDLE_CONNECTION_MS = 15_000;

/** A local reader may ask for a stream this long before its publish is there (a restart racing a reconnect). */
const READER_WAIT_MS = 10_000;

/** A publish whose first video tag has not come by then is refused. */
const FIRST_VIDEO_TIMEOUT_MS = 10_000;

/** After the first video tag, how long a publish may go without audio before it starts video-only. */
const AUDIO_GRACE_MS = 1000;

/** How often stalled publishers, idle connections and readers falling behind are looked for. */
const SWEEP_MS = 500;

/**
 * A local reader (the pipeline, a multistream push) may fall this far behind the publisher
 * before it is cut off: what a reader cannot take waits in its pipe's buffer, in memory.
 * Seconds of the publisher's own rate, and at least READER_MIN_BUFFER_BYTES, on top of the
 * group of pictures a joining reader is handed at once.
 */
export const READER_BUFFER_SECONDS = 4;
/**
 * A pipe's kernel buffer holds 64 KiB where a loopback socket's held megabytes: this floor is
 * that slack, so a reader that starts (ffmpeg's probe, its encoders' set-up) or has a slow
 * moment on a loaded host is not cut off for what a socket used to absorb. A stuck reader still
 * reaches it within seconds at any real rate.
 */
const READER_MIN_BUFFER_BYTES = 4 * 1024 * 1024;

/** The publisher's rate, for the reader cap, is measured over this much of the recent past. */
const RATE_WINDOW_MS = 5000;

/**
 * RTMP status codes a refused publisher receives before its socket closes (OBS logs the code
 * and description; ffmpeg prints `Server error: <description>`). BadName: the key is unknown,
 * deleted or suspended; Rejected: anything else (media, caps, capacity, a crash loop).
 */
export type RefusalStatus = "NetStream.Publish.BadName" | "NetStream.Publish.Rejected";

/** A refusal as RTMP says it: the edge's half of the one admission (see PublishRefusal). */
export function rtmpRefusalStatus(refusal: PublishRefusal): RefusalStatus {
  return refusal.kind === "unknown" || refusal.kind === "suspended" ? "NetStream.Publish.BadName" : "NetStream.Publish.Rejected";
}

/** One publish on a connection, from the publish command to its end. */
interface Publish {
  streamKey: string;
  protocol: IngestProtocol;
  /** The codecs of its first tags, once seen. */
  video?: string;
  audio?: string;
  /** Handed to the handlers (onPublishStart). */
  started: boolean;
  /** Handed to the handlers, and their answer not back yet. */
  starting?: boolean;
  /** Refuses the publish if no video comes. */
  firstVideoTimer?: NodeJS.Timeout;
  /** Starts it video-only if no audio comes. */
  audioGraceTimer?: NodeJS.Timeout;
  /** The stream's internal name, under which its readers read it. */
  alias: string;
  connection: RtmpServerConnection;
  source: LiveSource;
  stats: PublishStats;
  /** Bytes read at recent sweeps, for the publisher's rate. */
  samples: { at: number; bytes: number }[];
}

/** What the ingest knows of a live publisher. */
export interface PublisherStats extends PublishStatsView {
  bytesRead: number;
  /** Its video codec's name ("H.264", "HEVC", "AV1"), once its first video tag has shown it. */
  videoCodec: string | undefined;
  /** Its video tracks: [0], or the ids of an encoder's ladder (multitrack) whose configurations came. */
  videoTracks: SourceTrack[];
}

/**
 * An admitted publish carries the stream's internal name, under which the pipeline and pushes
 * read it (`read`). The stream key, a secret, then appears in no command line nor log (`ps`
 * shows every argv to every local user).
 */
export type Admission = { refusal: PublishRefusal } | { alias: string };

export interface IngestHandlers {
  /**
   * Decides on a publish while the publisher waits. Synchronous: the answer comes before
   * NetStream.Publish.Start (a refusal after it looks to OBS like a dropped connection, which
   * it retries for ever), and two publishers of one key are decided one after the other.
   */
  admit(streamKey: string, publisherId: string): Admission;
  /**
   * The publish sends media onair takes: hand it to its stream (its session row is written
   * meanwhile; its readers keep receiving). A refusal disconnects it.
   */
  onPublishStart(publisherId: string, streamKey: string, protocol: IngestProtocol): Promise<PublishRefusal | undefined>;
  /** The publisher left, or (`refusal`) was refused for what it sent after its start. */
  onPublishEnd(publisherId: string, refusal?: string): void;
}

export interface IngestOptions {
  /** A started publish that sends no media for this long is disconnected (PUBLISH_MEDIA_TIMEOUT_SECONDS). */
  mediaTimeoutMs: number;
  /** A local reader fell too far behind and was cut off (metrics). */
  onReaderCut?(): void;
  /** A publisher was disconnected for sending no media (metrics). */
  onPublisherStalled?(): void;
  /** The WebRTC and SRT bridges' tickets: a local publish under one is its stream key's. */
  bridges?: BridgeTickets;
}

function clearPublishTimers(publish: Publish): void {
  clearTimeout(publish.firstVideoTimer);
  clearTimeout(publish.audioGraceTimer);
}

/** `/live/<key>` → the key; anything else is not a stream of ours. */
export function streamKeyFromPath(streamPath: string): string | undefined {
  const m = /^\/([^/]+)\/([^/?]+)$/.exec(streamPath);
  return m && m[1] === INGEST_APP ? m[2] : undefined;
}

/** Whether a connection comes from this machine (the bridges). */
function isLocal(connection: RtmpServerConnection): boolean {
  const remote = connection.remoteAddress.replace(/^::ffff:/, "");
  return remote === "127.0.0.1" || remote === "::1" || remote === connection.localAddress.replace(/^::ffff:/, "");
}

/** A local reader (a pipe into an ffmpeg) and the publish it reads. */
class LocalReader {
  /** The publish it reads (after a takeover, the old one's until that one ends). */
  private source: LiveSource | undefined;
  constructor(readonly reader: SourceReader) {}
  join(source: LiveSource): void {
    this.source = source;
    source.add(this.reader);
  }
  leave(): void {
    this.source?.remove(this.reader);
  }
}

export class RtmpIngest {
  private readonly servers: RtmpServer[] = [];
  private closing = false;
  /** Admitted publishes, by publisher id. */
  private readonly publishes = new Map<string, Publish>();
  /** The publish each internal name is under now: the newest publisher's. */
  private readonly sources = new Map<string, Publish>();
  /** Local readers that asked for a stream before its publish came, by internal name. */
  private readonly waiting = new Map<string, Set<{ reader: LocalReader; timer: NodeJS.Timeout }>>();
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly handlers: IngestHandlers,
    private readonly log: Logger,
    private readonly options: IngestOptions,
  ) {}

  /** Listens for RTMP; resolves with the port bound. */
  async listen(port: number, host: string): Promise<number> {
    const bound = await this.serve(port, host);
    this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweepTimer.unref();
    return bound;
  }

  /** Listens for RTMPS (RTMP over TLS) as well, with the same admission; resolves with the port bound. */
  listenTls(port: number, host: string, tls: { cert: Buffer; key: Buffer }): Promise<number> {
    return this.serve(port, host, tls);
  }

  private async serve(port: number, host: string, tls?: { cert: Buffer; key: Buffer }): Promise<number> {
    const server = new RtmpServer({
      onPublish: (request) => Promise.resolve(this.onPublish(request)),
      onPlay: (request) => Promise.resolve(this.onPlay(request)),
      log: this.log.child({ ingest: tls ? "rtmps" : "rtmp" }),
      timeoutMs: IDLE_CONNECTION_MS,
      ...(tls ? { tls } : {}),
    });
    const bound = await server.listen(port, host);
    this.servers.push(server);
    return bound;
  }

  /** The RTMP server accepts connections (readiness). */
  get listening(): boolean {
    return this.servers.length > 0;
  }

  /** Bytes read so far from a publisher's connection (its ingest bitrate); undefined once it is gone. */
  bytesRead(publisherId: string): number | undefined {
    return this.publishes.get(publisherId)?.connection.bytesRead;
  }

  /** A live publisher's media clock, keyframe interval and audio; undefined once it is gone. */
  publisherStats(publisherId: string): PublisherStats | undefined {
    const publish = this.publishes.get(publisherId);
    if (!publish) return undefined;
    const { mediaMs, lastMediaAt, keyframeIntervalMs, hasAudio, configChanges } = publish.stats;
    return { mediaMs, lastMediaAt, keyframeIntervalMs, hasAudio, configChanges, bytesRead: publish.connection.bytesRead, videoCodec: publish.video, videoTracks: publish.source.videoTracks };
  }

  /** Disconnects a publisher at once (suspend, delete, a dead pipeline), telling it why when there is a reason. */
  disconnect(publisherId: string, refusal?: PublishRefusal): void {
    // The publish ends now, not when its socket has closed (a publisher may take its time to
    // hang up, a half-open one never does): its readers get end-of-stream and the handlers hear
    // of it before anything else happens, a newer publisher's start included.
    const publish = this.endPublish(publisherId);
    if (!publish) return;
    this.publishEnded(publisherId);
    if (refusal) publish.connection.closeWithStatus(rtmpRefusalStatus(refusal), refusal.reason);
    else publish.connection.close();
  }

  /**
   * The first step of a shutdown: no new connection is taken, and E-RTMP publishers that said
   * they can (capsEx) are asked to reconnect at once, to this address, before their sessions
   * end: behind a load balancer another node takes them now, not after the encoder's back-off
   * (this node, no longer listening, cannot take them back). The request goes out before their
   * socket closes; the others are ended with their sessions.
   */
  async drain(): Promise<void> {
    for (const server of this.servers) server.stopListening();
    const asked = [...this.publishes.values()].map((p) => p.connection).filter((c) => c.requestReconnect(undefined, "this server is shutting down: reconnect"));
    for (const connection of asked) connection.closeAfterSent();
    if (asked.length > 0) this.log.info({ publishers: asked.length }, "asked E-RTMP publishers to reconnect");
    await Promise.all(asked.map((c) => c.closed));
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweepTimer);
    // A shutdown is not the publishers' leaving: the session manager ends its sessions itself.
    for (const id of [...this.publishes.keys()]) this.endPublish(id);
    for (const set of this.waiting.values()) for (const w of set) clearTimeout(w.timer);
    this.waiting.clear();
    const servers = this.servers.splice(0);
    await Promise.all(servers.map((server) => server.close()));
  }

  private onPublish(request: PublishRequest): PublishDecision {
    const { connection } = request;
    const name = streamKeyFromPath(`/${request.app}/${request.streamName.split("?")[0]}`);
    // A bridge (WHIP, SRT, pull) publishes from this machine under a ticket standing for the key.
    const bridged = name !== undefined && isLocal(connection) ? this.options.bridges?.redeem(name, connection) : undefined;
    const key = bridged?.streamKey ?? name;
    const id = randomBytes(6).toString("hex");
    let admission: Admission;
    try {
      admission = key === undefined ? { refusal: refusePublish("unknown", `publish to ${INGEST_APP}/<stream key> only`) } : this.handlers.admit(key, id);
    } catch (err) {
      this.log.error({ err, publisherId: id }, "could not decide on a publish");
      admission = { refusal: refusePublish("unavailable", "internal error on the server: reconnect later") };
    }
    if ("refusal" in admission) {
      const { refusal } = admission;
      const status = rtmpRefusalStatus(refusal);
      // The key itself is a secret: never logged.
      this.log.info({ publisherId: id, ip: connection.remoteAddress, reason: refusal.reason, status }, "publish refused");
      return { ok: false, code: status, description: refusal.reason };
    }
    const publish: Publish = {
      streamKey: key!,
      protocol: bridged?.protocol ?? "rtmp",
      started: false,
      alias: admission.alias,
      connection,
      source: new LiveSource(),
      stats: new PublishStats(Date.now()),
      samples: [],
    };
    // The newest authenticated publisher wins: one still holding the stream (a half-open
    // connection, an encoder that reconnected before its old socket died) makes room, so an
    // encoder recovering from a dead uplink is never locked out of its own key.
    const holder = this.sources.get(publish.alias);
    if (holder) {
      const holderId = this.idOf(holder);
      this.log.warn({ publisherId: id, replaced: holderId, ip: connection.remoteAddress }, "a new publisher takes over the stream: the previous one is disconnected");
      if (holderId !== undefined) this.disconnect(holderId, refusePublish("unavailable", "replaced by a newer publisher of this stream"));
    }
    this.publishes.set(id, publish);
    this.sources.set(publish.alias, publish);
    // The session starts once the first tags show H.264 and AAC (see mediaCheck.ts).
    publish.firstVideoTimer = setTimeout(() => this.refuse(id, `no video received within ${FIRST_VIDEO_TIMEOUT_MS / 1000} s of the publish`), FIRST_VIDEO_TIMEOUT_MS);
    this.attachWaiting(publish);
    return {
      ok: true,
      sink: {
        media: (media) => this.onMedia(id, publish, media),
        end: () => {
          if (this.endPublish(id)) this.publishEnded(id);
        },
      },
    };
  }

  private idOf(publish: Publish): string | undefined {
    for (const [id, p] of this.publishes) if (p === publish) return id;
    return undefined;
  }

  /**
   * No one plays streams over RTMP: viewers use HLS and WebRTC, and this machine's own readers
   * (the pipeline, source pushes, publish relays) are pipes fed by `read`.
   */
  private onPlay(request: PlayRequest): PlayDecision {
    this.log.info({ ip: request.connection.remoteAddress }, "RTMP play refused: viewers play HLS");
    return { ok: false, code: "NetStream.Play.Failed", description: "this server does not play streams over RTMP: play HLS or WebRTC" };
  }

  /**
   * A local reader of the stream under an internal name (the pipe into a pipeline's, a source
   * push's or a publish relay's ffmpeg): it joins the publish there now, or waits a while for
   * one (the pipeline restarted while the encoder reconnects), then gets its end. Returns what
   * lets it go.
   */
  read(alias: string, reader: SourceReader): () => void {
    const local = new LocalReader(reader);
    const publish = this.sources.get(alias);
    if (publish) local.join(publish.source);
    else this.wait(alias, local);
    return () => {
      local.leave();
      this.stopWaiting(alias, local);
    };
  }

  /** A local reader waits for its stream's publish (the pipeline restarted while the encoder reconnects). */
  private wait(alias: string, reader: LocalReader): void {
    const set = this.waiting.get(alias) ?? new Set();
    this.waiting.set(alias, set);
    const timer = setTimeout(() => {
      this.stopWaiting(alias, reader);
      reader.reader.endPlay();
    }, READER_WAIT_MS);
    timer.unref();
    set.add({ reader, timer });
  }

  private stopWaiting(alias: string, reader: LocalReader): void {
    const set = this.waiting.get(alias);
    if (!set) return;
    for (const w of set) {
      if (w.reader !== reader) continue;
      clearTimeout(w.timer);
      set.delete(w);
    }
    if (set.size === 0) this.waiting.delete(alias);
  }

  private attachWaiting(publish: Publish): void {
    const set = this.waiting.get(publish.alias);
    if (!set) return;
    this.waiting.delete(publish.alias);
    for (const w of set) {
      clearTimeout(w.timer);
      w.reader.join(publish.source);
    }
  }

  /** One media message: its stats, the codec check of the first tags, then on to the readers in the form they read. */
  private onMedia(id: string, publish: Publish, media: PublishedMedia): void {
    if (this.publishes.get(id) !== publish) return;
    // Of data messages only the metadata goes on, as before: ffmpeg's FLV reader makes a stream
    // of its own out of others (cue points, text), which nothing downstream expects.
    if (media.kind === "data") return media.name === "onMetaData" ? publish.source.pushData(media.timestamp, media.name, media.values) : undefined;
    const now = Date.now();
    const form = media.kind === "video" ? videoForPipeline(media.tag, media.body) : audioForPipeline(media.tag, media.body);
    if (media.kind === "video") publish.stats.video(form.body ?? media.body, media.timestamp, now);
    else publish.stats.audio(form.body ?? media.body, media.timestamp, now);
    if (form.codec !== undefined && publish[media.kind] === undefined) {
      publish[media.kind] = form.codec;
      const refusal = media.kind === "video" ? refuseVideo(form.codec) : refuseAudio(form.codec);
      if (refusal) return this.refuse(id, refusal);
    }
    if (form.body) publish.source.push({ kind: media.kind, timestamp: media.timestamp, body: form.body });
    // An encoder's ladder: its other tracks go to their own readers (renditions as sent).
    if (media.kind === "video") for (const t of otherVideoTracks(media.tag)) publish.source.push({ kind: "video", timestamp: media.timestamp, body: t.body, track: t.trackId });
    this.startWhenKnown(id, publish);
  }

  /**
   * The video is H.264: the publish becomes a live session once its audio is known too, or
   * after a moment without audio (video-only publishers exist; ffmpeg sends video first).
   */
  private startWhenKnown(id: string, publish: Publish): void {
    if (publish.started || publish.video === undefined) return;
    if (publish.audio === undefined) {
      publish.audioGraceTimer ??= setTimeout(() => this.start(id, publish), AUDIO_GRACE_MS);
      return;
    }
    this.start(id, publish);
  }

  private start(id: string, publish: Publish): void {
    if (publish.started || publish.starting || this.publishes.get(id) !== publish) return;
    clearPublishTimers(publish);
    publish.starting = true;
    this.log.debug({ publisherId: id, video: publish.video, audio: publish.audio ?? "none" }, "publisher's media accepted");
    void this.handlers.onPublishStart(id, publish.streamKey, publish.protocol).then(
      (refusal) => this.started(id, publish, refusal),
      (err: unknown) => {
        this.log.error({ err, publisherId: id }, "could not start a publish");
        this.started(id, publish, refusePublish("unavailable", "internal error on the server: reconnect later"));
      },
    );
  }

  private started(id: string, publish: Publish, refusal: PublishRefusal | undefined): void {
    // Gone meanwhile: the handlers heard of its end already.
    if (this.publishes.get(id) !== publish) return;
    if (refusal) {
      this.log.info({ publisherId: id, ip: publish.connection.remoteAddress, reason: refusal.reason, status: rtmpRefusalStatus(refusal) }, "publish refused");
      return this.disconnect(id, refusal);
    }
    publish.started = true;
  }

  /** Refuses a publish for what it sends (before its session starts, or ending it). */
  private refuse(id: string, reason: string): void {
    const publish = this.endPublish(id);
    if (!publish) return;
    this.log.warn({ publisherId: id, ip: publish.connection.remoteAddress, reason }, "publish refused");
    this.publishEnded(id, reason);
    publish.connection.closeWithStatus("NetStream.Publish.Rejected", reason);
  }

  /** An admitted publish is over (whether or not it started): the handlers let go of it. */
  private publishEnded(id: string, refusal?: string): void {
    if (this.closing) return;
    try {
      this.handlers.onPublishEnd(id, refusal);
    } catch (err) {
      this.log.error({ err, publisherId: id }, "could not end a publish");
    }
  }

  /** Forgets a publish and its timers, and ends its readers; returns it, if there was one. */
  private endPublish(id: string): Publish | undefined {
    const publish = this.publishes.get(id);
    if (!publish) return undefined;
    clearPublishTimers(publish);
    this.publishes.delete(id);
    if (this.sources.get(publish.alias) === publish) this.sources.delete(publish.alias);
    // Its readers get end-of-stream: the pipeline's ffmpeg finishes its playlists and exits 0.
    publish.source.end();
    return publish;
  }

  /**
   * Every SWEEP_MS: publishers whose media stopped (asleep, uplink gone, socket half-open) are
   * disconnected, so their stream's reconnect window starts and the key is free; readers too
   * far behind are cut off.
   */
  private sweep(): void {
    const now = Date.now();
    for (const [id, publish] of this.publishes) {
      publish.samples.push({ at: now, bytes: publish.connection.bytesRead });
      while (publish.samples.length > 2 && now - publish.samples[0]!.at > RATE_WINDOW_MS) publish.samples.shift();
      const silentMs = now - publish.stats.lastMediaAt;
      if (publish.started && silentMs > this.options.mediaTimeoutMs) {
        this.log.warn({ publisherId: id, ip: publish.connection.remoteAddress, silentSeconds: Math.round(silentMs / 1000) }, "publisher sent no media: disconnected");
        this.options.onPublisherStalled?.();
        this.disconnect(id);
        continue;
      }
      for (const reader of publish.source.readers) this.capReader(id, publish, reader);
    }
  }

  /** A reader whose unsent media exceeds a few seconds of its publisher's rate is cut off. */
  private capReader(publisherId: string, publish: Publish, reader: SourceReader): void {
    const buffered = reader.bufferedBytes;
    if (buffered <= READER_MIN_BUFFER_BYTES) return;
    const first = publish.samples[0];
    const last = publish.samples[publish.samples.length - 1];
    const rate = first && last && last.at > first.at ? ((last.bytes - first.bytes) * 1000) / (last.at - first.at) : 0;
    // The first sweeps know no rate yet; the join's burst (the cached group of pictures) is not lag.
    const cap = Math.max(READER_MIN_BUFFER_BYTES, rate * READER_BUFFER_SECONDS) + publish.source.cachedBytes;
    if (buffered <= cap) return;
    this.log.warn({ bufferedBytes: buffered, capBytes: Math.round(cap), publisherId }, `a local reader (pipeline, push) fell more than ${READER_BUFFER_SECONDS} s behind its publisher: cut off`);
    this.options.onReaderCut?.();
    publish.source.remove(reader);
    reader.cut();
  }
}
