import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { Logger } from "../log";
import { spawnSupervised, type ProcessRegistry, type SupervisedProcess } from "../media";
import { FlvReader, RtmpError, RtmpPublisher, splitRtmpPath, type RtmpDestination } from "../rtmp";
import { describePushFailure, describeRelayInputFailure, describeRtmpFailure, type PushFailure } from "./failure";
import { buildPushArgs, progressShowsMedia, type PushInput } from "./pushArgs";
import type { TargetUrl } from "./targetUrl";

// One attempt of a push: either ffmpeg reads the input and onair publishes what it writes
// (rtmp, rtmps: the destination's url never reaches a process's argv), or ffmpeg does it all
// (srt, rtmp with credentials). Both end with one AttemptEnd; TargetPush restarts them.

/** How one attempt ended. */
export interface AttemptEnd {
  /** Stopped by us (stop, or the drain after the session ended ran out). */
  requested: boolean;
  /** Its input ended (the publisher left, the session's playlists ended): not the destination's fault. */
  inputEnded: boolean;
  failure?: PushFailure;
}

export interface PushAttempt {
  readonly ended: Promise<AttemptEnd>;
  readonly pid: number | undefined;
  /** The session ended: what the input still holds goes out; stopped after `drainMs`. */
  finish(drainMs: number): void;
  stop(graceMs: number): void;
}

interface AttemptOptions {
  input: PushInput;
  videoOnly: boolean;
  ffmpegPath: string;
  registry: ProcessRegistry;
  /** Redacts the url in what it logs (the supervisor logs argv and stderr). */
  processLog: Logger;
  /** The target's url: failures are described against it (and it is redacted from them). */
  url: string;
  onConnected(): void;
  /** Bounds the publish's set-up and a write that makes no progress (RtmpPublisher's 10 s unless set). */
  timeoutMs?: number;
}

/** The RTMP destination for a checked target url: connected to at `address`, while SNI, the certificate check and tcUrl keep the url's host name. */
export function rtmpDestination(url: TargetUrl, address: string, tls: { verify: boolean; ca?: string | Buffer }): RtmpDestination {
  const port = url.port ?? (url.scheme === "rtmps" ? 443 : 1935);
  const { app, streamName } = splitRtmpPath(url.path);
  const host = url.hostKind === "ipv6" ? `[${url.host}]` : url.host;
  return {
    address,
    port,
    ...(url.scheme === "rtmps" ? { tls: { servername: url.hostKind === "name" ? url.host : undefined, ...tls } } : {}),
    app,
    streamName,
    // As ffmpeg sends it: the port always named.
    tcUrl: `${url.scheme}://${host}:${port}/${app}`,
  };
}

/**
 * A push's ffmpeg. A source input is written into its stdin from the ingest, from the spawn
 * until it exits (then the ingest lets that reader go); a rendition input is a file it reads.
 */
function spawnPush(o: AttemptOptions, args: string[], onStdoutLine?: (line: string) => void): SupervisedProcess {
  const source = o.input.kind === "source" ? o.input : undefined;
  const p = spawnSupervised(o.registry, {
    command: o.ffmpegPath,
    args,
    log: o.processLog,
    name: "ffmpeg push",
    inputPipe: source !== undefined,
    ...(onStdoutLine ? { onStdoutLine } : {}),
    tailLines: 20,
  });
  if (source && p.stdin) {
    const stopFeed = source.feed(p.stdin);
    void p.ended.then(() => stopFeed());
  }
  return p;
}

/** ffmpeg pushes to the destination itself; connected once its -progress shows media written. */
export class DirectPush implements PushAttempt {
  readonly ended: Promise<AttemptEnd>;
  private readonly process: SupervisedProcess;

  constructor(o: AttemptOptions & { destination: string; tlsVerify: boolean; caFile: string | undefined }) {
    let connected = false;
    const args = buildPushArgs({ input: o.input, videoOnly: o.videoOnly, output: { kind: "direct", destination: o.destination, tlsVerify: o.tlsVerify, caFile: o.caFile } });
    this.process = spawnPush(o, args, (line) => {
      if (connected || !progressShowsMedia(line)) return;
      connected = true;
      o.onConnected();
    });
    this.ended = this.process.ended.then((end) => {
      if (end.requested) return { requested: true, inputEnded: false };
      if (end.code === 0) return { requested: false, inputEnded: true };
      return { requested: false, inputEnded: false, failure: describePushFailure(end.stderrTail, o.url, { connected, code: end.code, signal: end.signal }) };
    });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  finish(drainMs: number): void {
    const timer = setTimeout(() => void this.process.stop(2000), drainMs);
    void this.process.ended.finally(() => clearTimeout(timer));
  }

  stop(graceMs: number): void {
    void this.process.stop(graceMs);
  }
}

/**
 * onair publishes over RTMP(S) with its own client (src/rtmp) what ffmpeg copies from the
 * input as FLV into a unix socket (in a folder of mode 0700). First the publish (so a
 * destination that refuses costs no ffmpeg), then ffmpeg; connected once the first media
 * message went out. When the socket is full (a slow destination), the FLV socket is paused and
 * ffmpeg waits on its write, as it would on the destination's.
 */
export class RelayPush implements PushAttempt {
  readonly ended: Promise<AttemptEnd>;
  private process: SupervisedProcess | undefined;
  private publisher: RtmpPublisher | undefined;
  private flv: net.Socket | undefined;
  private readonly abort = new AbortController();
  private requested = false;
  private connected = false;
  private failure: PushFailure | undefined;
  private drainTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly o: AttemptOptions,
    private readonly destination: RtmpDestination,
  ) {
    this.ended = this.run()
      // Not expected (every failure of the attempt is described above): the push must still end and retry.
      .catch((err: unknown) => ({ requested: this.requested, inputEnded: false, failure: { reason: `the push failed: ${(err as Error).message}`, permanent: false } }))
      .finally(() => clearTimeout(this.drainTimer));
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  finish(drainMs: number): void {
    // Not yet publishing: nothing to drain.
    if (!this.process) return this.stop(2000);
    this.drainTimer = setTimeout(() => this.stop(2000), drainMs);
  }

  stop(graceMs: number): void {
    this.requested = true;
    this.abort.abort();
    void this.process?.stop(graceMs);
    this.publisher?.close();
    this.flv?.destroy();
  }

  private fail(failure: PushFailure): void {
    this.failure ??= failure;
    void this.process?.stop(2000);
    this.publisher?.close();
    this.flv?.destroy();
  }

  private async run(): Promise<AttemptEnd> {
    let publisher: RtmpPublisher;
    try {
      publisher = await RtmpPublisher.publish(this.destination, { signal: this.abort.signal, timeoutMs: this.o.timeoutMs });
    } catch (err) {
      if (this.requested) return { requested: true, inputEnded: false };
      const e = err instanceof RtmpError ? err : new RtmpError("protocol", String(err), "connect");
      return { requested: false, inputEnded: false, failure: describeRtmpFailure(e, this.o.url, { connected: false, timeoutMs: this.o.timeoutMs }) };
    }
    this.publisher = publisher;
    if (this.requested) {
      publisher.close();
      return { requested: true, inputEnded: false };
    }
    void publisher.ended.then((err) => {
      if (err && !this.requested) this.fail(describeRtmpFailure(err, this.o.url, { connected: this.connected, timeoutMs: this.o.timeoutMs }));
    });
    void publisher.mediaSent.then(() => {
      if (this.requested || this.failure) return;
      this.connected = true;
      this.o.onConnected();
    });
    let dir: string;
    try {
      // mkdtemp makes it 0700: no other user can reach the socket in it.
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-push-"));
    } catch (err) {
      publisher.close();
      return { requested: this.requested, inputEnded: false, failure: { reason: `could not start the push: ${(err as Error).message}`, permanent: false } };
    }
    try {
      return await this.relay(publisher, path.join(dir, "flv.sock"));
    } finally {
      publisher.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  /** ffmpeg's FLV → the publisher, until ffmpeg has exited and its socket is read to the end. */
  private async relay(publisher: RtmpPublisher, socketPath: string): Promise<AttemptEnd> {
    const server = net.createServer();
    let inputRead: Promise<void> | undefined;
    server.once("connection", (socket) => {
      // One connection, ffmpeg's: nothing else may write into the push.
      server.close();
      this.flv = socket;
      inputRead = new Promise((resolve) => socket.once("close", () => resolve()));
      if (this.requested || this.failure) return void socket.destroy();
      socket.on("error", () => undefined);
      this.forward(socket, publisher);
    });
    try {
      await new Promise<void>((resolve, reject) => server.once("error", reject).listen(socketPath, resolve));
    } catch (err) {
      return { requested: this.requested, inputEnded: false, failure: { reason: `could not start the push: ${(err as Error).message}`, permanent: false } };
    }
    const p = spawnPush(this.o, buildPushArgs({ input: this.o.input, videoOnly: this.o.videoOnly, output: { kind: "relay", socketPath } }));
    this.process = p;
    if (this.requested || this.failure) void p.stop(2000);
    const end = await p.ended;
    server.close();
    if (!end.requested && end.code !== 0) {
      this.failure ??= describeRelayInputFailure(end.stderrTail, [this.o.url], end);
    }
    // What ffmpeg wrote before it exited is still to be sent.
    if (inputRead) await inputRead;
    const inputEnded = !this.requested && !this.failure && end.code === 0;
    if (inputEnded) await publisher.finish();
    return { requested: this.requested, inputEnded, ...(this.failure && !this.requested ? { failure: this.failure } : {}) };
  }

  private forward(socket: net.Socket, publisher: RtmpPublisher): void {
    const reader = new FlvReader();
    socket.on("data", (data: Buffer) => {
      let tags;
      try {
        tags = reader.push(data);
      } catch (err) {
        return this.fail({ reason: `reading the stream to push failed: ${(err as Error).message}`, permanent: false });
      }
      if (tags.length > 0 && !publisher.sendTags(tags) && !socket.isPaused()) {
        socket.pause();
        void publisher.drained().then(() => socket.resume());
      }
    });
  }
}
