import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openStore, type Store, type Tx } from "../../src/db";
import type { EventSink } from "../../src/events";
import { LiveHls, type Fmp4Piece, type PackagerRun } from "../../src/hls";
import { createLogger } from "../../src/log";
import { buildLiveArgs, ProcessRegistry, renditionLadder, type LivePipelineOptions, type ProcessEnd } from "../../src/media";
import type { Clock, ClockTimer, LiveSessionInfo, LiveSessionObserver } from "../../src/sessions";
import type { StreamRuntimeDeps } from "../../src/sessions/streamRuntime";
import { fmp4FromPipes } from "./fmp4";
import { FFMPEG } from "./media";

// In-process doubles for the live session rules (MediaMTX's path_manager_test.go does the same
// for its paths): a clock the test advances, pipelines that go playable, write segments and exit
// when told, and the project's own store on a temporary SQLite file.

interface FakeTimer extends ClockTimer {
  at: number;
  every?: number;
  fn: () => void;
  cleared: boolean;
}

/** Time that moves only when the test advances it; its timers fire in order as it does. */
export class FakeClock implements Clock {
  private time: number;
  private timers: FakeTimer[] = [];

  constructor(start = 1_700_000_000_000) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    const t: FakeTimer = { at: this.time + Math.max(0, ms), fn, cleared: false, unref: () => t };
    this.timers.push(t);
    return t;
  }

  setInterval(fn: () => void, ms: number): ClockTimer {
    const t: FakeTimer = { at: this.time + ms, every: ms, fn, cleared: false, unref: () => t };
    this.timers.push(t);
    return t;
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    if (timer) (timer as FakeTimer).cleared = true;
  }

  clearInterval(timer: ClockTimer | undefined): void {
    this.clearTimeout(timer);
  }

  /** Timers waiting (not cleared), one-shot ones only: what the session still means to do. */
  pendingDelays(): number[] {
    return this.timers.filter((t) => !t.cleared && t.every === undefined).map((t) => t.at - this.time);
  }

  /** Moves time on by `ms`, firing each timer due on the way (and letting its work settle). */
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => !t.cleared && t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.time = due.at;
      if (due.every !== undefined) due.at += due.every;
      else due.cleared = true;
      due.fn();
      await settle();
    }
    this.time = until;
    this.timers = this.timers.filter((t) => !t.cleared);
    await settle();
  }
}

/** Lets promise chains and the thread pool's file writes run (no time passes on the fake clock). */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Waits for something the runtime does on the thread pool (segment files, SQLite): no fake time
 * passes, and real time only as long as the disk takes (bounded by `timeoutMs`).
 */
export async function until<T>(what: string, check: () => T | Promise<T>, timeoutMs = 5000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await check();
    if (v) return v;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  throw new Error(`never happened: ${what}`);
}

/** A pipeline run that does what the test says: media in (segments, then playable), an exit. */
export class FakePipeline {
  private run: PackagerRun | undefined;
  private isPlayable = false;
  exited: ProcessEnd | undefined;
  stops = 0;

  constructor(
    readonly options: LivePipelineOptions,
    private readonly clock: FakeClock,
  ) {}

  start(): void {
    this.run = this.options.packager.startRun();
  }

  /** ffmpeg's fragments reach the packager (as its pipes would): segments complete, and it becomes playable. */
  media(pieces: Fmp4Piece[][]): void {
    const run = this.run!;
    const n = Math.max(...pieces.map((x) => x.length));
    for (let i = 0; i < n; i++) pieces.forEach((list, r) => list[i] && run.push(r, list[i]!.bytes, this.clock.now()));
    if (!this.isPlayable && run.playable) {
      this.isPlayable = true;
      this.options.onPlayable();
    }
  }

  /** ffmpeg exits by itself (a crash: code 1; its input cut: code 0). */
  exit(code: number | null = 1, signal: NodeJS.Signals | null = null, requested = false): void {
    if (this.exited) return;
    this.exited = { code, signal, stderrTail: [], durationMs: 0, requested };
    this.run?.end();
    this.options.onEnded(this.exited);
  }

  /** Asked to stop: it flushes and exits at once. */
  async stop(): Promise<void> {
    this.stops++;
    this.exit(255, null, true);
  }
}

/** Every pipeline the runtime made, newest last, and each stream's. */
export class FakePipelines {
  readonly all: FakePipeline[] = [];
  constructor(private readonly clock: FakeClock) {}

  readonly make = (options: LivePipelineOptions): FakePipeline => {
    const p = new FakePipeline(options, this.clock);
    this.all.push(p);
    return p;
  };

  /** The newest run of a stream (by its input's internal name, the stream id). */
  latest(streamId?: string): FakePipeline {
    const runs = streamId ? this.all.filter((p) => p.options.input.name === streamId) : this.all;
    const p = runs[runs.length - 1];
    if (!p) throw new Error("no pipeline was started");
    return p;
  }
}

/** What observers were told, in order. */
export class RecordingObserver implements LiveSessionObserver {
  readonly heard: string[] = [];
  sessionLive(info: LiveSessionInfo): void {
    this.heard.push(`live ${info.streamId}`);
  }
  sourceLost(info: LiveSessionInfo): void {
    this.heard.push(`lost ${info.streamId}`);
  }
  sessionEnded(info: LiveSessionInfo): void {
    this.heard.push(`ended ${info.streamId}`);
  }
  segmentWritten(info: LiveSessionInfo): void {
    this.heard.push(`segment ${info.streamId}`);
  }
  count(what: string): number {
    return this.heard.filter((h) => h === what).length;
  }
}

/** The events raised, once their transaction committed (a rolled-back one raised nothing). */
export class RecordingEvents implements EventSink {
  readonly raised: { name: string; streamId: string }[] = [];
  async raise(name: string, streamId: string, _payload: unknown, within?: Tx): Promise<void> {
    const record = () => this.raised.push({ name, streamId });
    if (within) within.db.afterCommit(record);
    else record();
  }
  names(streamId: string): string[] {
    return this.raised.filter((e) => e.streamId === streamId).map((e) => e.name);
  }
}

const mediaCache = new Map<string, Fmp4Piece[][]>();

/** The fMP4 the live pipeline's ffmpeg writes for `seconds` of a published H.264/AAC stream, source rendition only (made once, in a folder of its own removed after). */
export async function sourceMedia(seconds = 3): Promise<Fmp4Piece[][]> {
  const key = String(seconds);
  const cached = mediaCache.get(key);
  if (cached) return cached;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-media-"));
  try {
    const pieces = await encodeSourceMedia(dir, seconds);
    mediaCache.set(key, pieces);
    return pieces;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function encodeSourceMedia(dir: string, seconds: number): Promise<Fmp4Piece[][]> {
  const flv = path.join(dir, `src${seconds}.flv`);
  const made = spawnSync(FFMPEG, [
    "-hide_banner", "-loglevel", "error", "-y",
    "-f", "lavfi", "-i", `testsrc2=size=160x90:rate=30:duration=${seconds}`,
    "-f", "lavfi", "-i", `sine=frequency=440:sample_rate=44100:duration=${seconds}`,
    "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac", "-f", "flv", flv,
  ]);
  if (made.status !== 0) throw new Error(String(made.stderr));
  const args = buildLiveArgs({ inputFile: flv, renditions: renditionLadder([], 1), segmentSeconds: 1, fragmentMicros: 200_000, audioBitrate: 96_000 });
  return fmp4FromPipes(args, 1);
}

export interface LiveWorld {
  dir: string;
  store: Store;
  clock: FakeClock;
  pipelines: FakePipelines;
  events: RecordingEvents;
  observer: RecordingObserver;
  /** Publishers disconnected by the runtime, with what they were told. */
  disconnected: { publisherId: string; reason: string | undefined }[];
  /** What storageProblem() answers: set it to fail the disk. */
  storage: { problem: string | undefined };
  deps: StreamRuntimeDeps;
  close(): Promise<void>;
}

/** A store on a temporary SQLite file, and runtime deps whose time, pipelines, events and publishers are the test's. */
export async function liveWorld(): Promise<LiveWorld> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-live-"));
  const store = await openStore({ file: path.join(dir, "onair.db") });
  const clock = new FakeClock();
  const pipelines = new FakePipelines(clock);
  const events = new RecordingEvents();
  const observer = new RecordingObserver();
  const disconnected: LiveWorld["disconnected"] = [];
  const storage = { problem: undefined as string | undefined };
  const deps: StreamRuntimeDeps = {
    store,
    nodeId: "node-a",
    events,
    log: createLogger("silent"),
    registry: new ProcessRegistry(),
    ffmpegPath: "ffmpeg-not-run",
    hlsDir: path.join(dir, "hls"),
    // The fake pipelines read nothing: their input is never fed.
    readSource: () => () => undefined,
    segmentSeconds: 1,
    listSize: 6,
    lowLatency: true,
    ffmpegCmaf: false,
    liveHls: new LiveHls(),
    disconnectPublisher: (publisherId, refusal) => void disconnected.push({ publisherId, reason: refusal?.reason }),
    observers: [observer],
    storageProblem: () => storage.problem,
    streamTakenOver: () => false,
    publisherStats: () => undefined,
    reconnectWindowSeconds: 10,
    clock,
    pipelines: pipelines.make,
  };
  return {
    dir,
    store,
    clock,
    pipelines,
    events,
    observer,
    disconnected,
    storage,
    deps,
    async close() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
