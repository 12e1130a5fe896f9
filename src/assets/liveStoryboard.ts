import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../log";
import {
  buildSpriteArgs,
  buildTileArgs,
  jpegSize,
  renderStoryboardVtt,
  spawnSupervised,
  spriteList,
  STORYBOARD_DIR,
  STORYBOARD_SPRITE,
  takesTile,
  trimTiles,
  type ProcessRegistry,
  type SupervisedProcess,
  type Tile,
} from "../media";
import type { LiveSessionInfo, LiveSessionObserver, WrittenSegment } from "../sessions";

// A DVR stream's seek preview: a tile of rendition 0 every STORYBOARD_SECONDS, written to
// `<hlsDir>/<playbackId>/storyboard/<msn>.jpg` while inside the window, and the sprite of them
// built when asked for. The tiles' dates are kept here, in memory: an ended session's stay
// (as its DVR window does) until the stream's next session.

/** A tile's ffmpeg decodes one keyframe; one that takes longer is stuck. */
const TILE_TIMEOUT_MS = 5000;
/** A sprite of an hour's window is 720 small decodes and one encode. */
const SPRITE_TIMEOUT_MS = 20_000;

interface Board {
  playbackId: string;
  sessionId: string;
  dir: string;
  log: Logger;
  tiles: Tile[];
  /** ms: the program date of the newest tile taken or being taken. */
  lastTileAt: number | undefined;
  /** ms: where the newest segment ends. */
  edge: number;
  /** The first tile's size: the sprite's cells. */
  size: { width: number; height: number } | undefined;
  running: SupervisedProcess | undefined;
  /** Tiles came or went since the sprite on disk was built. */
  changed: boolean;
  building: Promise<string | undefined> | undefined;
  warned: boolean;
  ended: boolean;
}

export interface LiveStoryboardOptions {
  hlsDir: string;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
}

export class LiveStoryboard implements LiveSessionObserver {
  /** By playback id. */
  private readonly boards = new Map<string, Board>();

  constructor(private readonly o: LiveStoryboardOptions) {}

  sessionLive(info: LiveSessionInfo): void {
    const old = this.boards.get(info.playbackId);
    if (old?.sessionId === info.sessionId) return;
    // The stream's previous session's window is gone with its playlists.
    if (old) this.drop(old);
    if (info.dvrSeconds <= 0 || !this.o.ffmpegPath) return;
    const dir = path.join(this.o.hlsDir, info.playbackId, STORYBOARD_DIR);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    const board: Board = { playbackId: info.playbackId, sessionId: info.sessionId, dir, log: info.log, tiles: [], lastTileAt: undefined, edge: 0, size: undefined, running: undefined, changed: true, building: undefined, warned: false, ended: false };
    this.boards.set(info.playbackId, board);
  }

  sessionEnded(info: LiveSessionInfo): void {
    const board = this.boards.get(info.playbackId);
    if (board?.sessionId !== info.sessionId) return;
    board.ended = true;
    board.running?.kill();
  }

  segmentWritten(info: LiveSessionInfo, segment: WrittenSegment): void {
    if (segment.rendition.index !== 0 || info.dvrSeconds <= 0) return;
    const board = this.boards.get(info.playbackId);
    if (board?.sessionId !== info.sessionId || board.ended) return;
    board.edge = Math.max(board.edge, segment.programDateTime + segment.duration * 1000);
    const last = board.tiles[board.tiles.length - 1];
    if (last) last.duration = Math.max(last.duration, (board.edge - last.programDateTime) / 1000);
    const { kept, dropped } = trimTiles(board.tiles, board.edge, info.dvrSeconds);
    if (dropped.length > 0) {
      board.tiles = kept;
      board.changed = true;
      for (const t of dropped) void fs.promises.rm(this.tileFile(board, t.msn), { force: true });
    }
    // One tile at a time: a busy machine skips tiles rather than queueing ffmpegs.
    if (board.running || !takesTile(board.lastTileAt, segment.programDateTime)) return;
    board.lastTileAt = segment.programDateTime;
    void this.take(board, segment).catch((err: unknown) => this.failed(board, { err }));
  }

  /** The storyboard's WebVTT, the sprite named `sprite`; undefined: no DVR here, or no tile yet. */
  vtt(playbackId: string, sprite = STORYBOARD_SPRITE): string | undefined {
    const board = this.boards.get(playbackId);
    if (!board?.size || board.tiles.length === 0) return undefined;
    return renderStoryboardVtt(board.tiles, board.size, sprite);
  }

  /** The sprite's file, built first if tiles changed since the last one (one build at a time); undefined: none. */
  sprite(playbackId: string): Promise<string | undefined> {
    const board = this.boards.get(playbackId);
    if (!board?.size || board.tiles.length === 0) return Promise.resolve(undefined);
    const file = path.join(board.dir, STORYBOARD_SPRITE);
    if (board.building) return board.building;
    if (!board.changed && fs.existsSync(file)) return Promise.resolve(file);
    // A folder gone under it (the next session's start) costs the answer, never an unhandled rejection.
    board.building = this.build(board, file)
      .catch((err: unknown) => (this.failed(board, { err }), undefined))
      .finally(() => (board.building = undefined));
    return board.building;
  }

  private tileFile(board: Board, msn: number): string {
    return path.join(board.dir, `${msn}.jpg`);
  }

  private async take(board: Board, segment: WrittenSegment): Promise<void> {
    // Read before ffmpeg starts: a segment already gone costs no process.
    const input = Buffer.concat([await fs.promises.readFile(segment.map.file), await fs.promises.readFile(segment.file)]);
    if (board.ended || !this.current(board)) return;
    const output = this.tileFile(board, segment.seq);
    const end = await this.run(board, buildTileArgs(output), TILE_TIMEOUT_MS, "ffmpeg storyboard tile", input);
    // Killed by the session's end: no failure.
    if (end.code !== 0) return end.requested && board.ended ? undefined : this.failed(board, { code: end.code, signal: end.signal, stderr: end.stderrTail.slice(-2) });
    if (!this.current(board)) return void fs.promises.rm(output, { force: true });
    board.size ??= jpegSize(await fs.promises.readFile(output));
    if (!board.size) return this.failed(board, { file: output });
    board.tiles.push({ msn: segment.seq, programDateTime: segment.programDateTime, duration: Math.max(segment.duration, (board.edge - segment.programDateTime) / 1000) });
    board.changed = true;
  }

  private async build(board: Board, file: string): Promise<string | undefined> {
    const tiles = board.tiles.slice();
    const size = board.size!;
    board.changed = false;
    const list = path.join(board.dir, "sprite.ffconcat");
    const temp = path.join(board.dir, "sprite.tmp.jpg");
    await fs.promises.writeFile(list, spriteList(tiles.map((t) => this.tileFile(board, t.msn))));
    const end = await this.run(board, buildSpriteArgs({ list, count: tiles.length, size, output: temp }), SPRITE_TIMEOUT_MS, "ffmpeg storyboard sprite");
    if (end.code !== 0) {
      board.changed = true;
      this.failed(board, { code: end.code, signal: end.signal, stderr: end.stderrTail.slice(-2) });
      return fs.existsSync(file) ? file : undefined;
    }
    // Renamed over the last one: a viewer reading it meanwhile gets either whole.
    await fs.promises.rename(temp, file);
    return file;
  }

  /** One ffmpeg of the board's, killed after `timeoutMs`; `input` is written to its stdin. */
  private async run(board: Board, args: string[], timeoutMs: number, name: string, input?: Buffer) {
    const child = spawnSupervised(this.o.registry, { command: this.o.ffmpegPath!, args, log: board.log, name, inputPipe: input !== undefined, tailLines: 5 });
    if (input) board.running = child;
    const timer = setTimeout(() => child.kill(), timeoutMs);
    child.stdin?.end(input);
    try {
      return await child.ended;
    } finally {
      clearTimeout(timer);
      if (board.running === child) board.running = undefined;
    }
  }

  /** Still the stream's board: a next session's start drops it (and its folder). */
  private current(board: Board): boolean {
    return this.boards.get(board.playbackId) === board;
  }

  /** A storyboard's failure costs a tile (or a sprite), never the stream: said once per session. */
  private failed(board: Board, fields: Record<string, unknown>): void {
    if (board.warned) return;
    board.warned = true;
    board.log.warn(fields, "a storyboard tile or sprite could not be made (the stream goes on without it)");
  }

  private drop(board: Board): void {
    board.ended = true;
    board.running?.kill();
    this.boards.delete(board.playbackId);
    fs.rmSync(board.dir, { recursive: true, force: true });
  }
}
