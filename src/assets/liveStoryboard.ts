import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../log";
import {
  buildSpriteArgs,
  buildTileArgs,
  jpegSize,
  renderStoryboardVtt,
  spawnSupervised,
  spriteFile,
  spriteList,
  spriteTiles,
  STORYBOARD_DIR,
  takesTile,
  tileDate,
  trimTiles,
  type ProcessRegistry,
  type SupervisedProcess,
  type Tile,
} from "../media";
import type { LiveSessionInfo, LiveSessionObserver, WrittenSegment } from "../sessions";

// A DVR stream's seek preview: a tile of rendition 0 every STORYBOARD_SECONDS, written to
// `<hlsDir>/<playbackId>/storyboard/<msn>.jpg` while inside the window, and sprites of them
// built when asked for, each under its own id: a VTT names the sprite drawn from exactly its
// tiles. The tiles' dates are kept here, in memory; an ended session's board stays a while for
// its DVR window's viewers, bounded in time and in number.

/** A tile's ffmpeg decodes one keyframe; one that takes longer is stuck. */
const TILE_TIMEOUT_MS = 5000;
/** A sprite of an hour's window is 720 small decodes and one encode. */
const SPRITE_TIMEOUT_MS = 20_000;
/** Sprite builds at once on this node: each decodes up to a thousand tiles, and the node's cores are the streams'. */
const MAX_BUILDS = 1;
/** A replaced sprite is served this long: a player that has just read the VTT naming it still gets it. */
export const SPRITE_KEEP_MS = 30_000;
/** An ended session's board is dropped after its window's length, at most this long. */
const ENDED_KEEP_MS = 10 * 60_000;
/** Ended boards kept on this node at most: the oldest goes first. */
const ENDED_BOARDS_MAX = 50;

/** One sprite build: its file, and the tiles it draws (which its VTT's cues name). */
interface Sprite {
  id: string;
  file: string;
  tiles: Tile[];
  size: { width: number; height: number };
  /** ms: when a newer sprite replaced it. */
  replacedAt: number | undefined;
}

interface Board {
  playbackId: string;
  sessionId: string;
  dir: string;
  log: Logger;
  tiles: Tile[];
  /** ms: the session's first tile's date: cue times count from it, whatever the window has left. */
  origin: number | undefined;
  /** ms: the program date of the newest tile taken or being taken. */
  lastTileAt: number | undefined;
  /** ms: where the newest segment ends. */
  edge: number;
  /** The first tile's size: the sprite's cells. */
  size: { width: number; height: number } | undefined;
  /** A tile is being taken, from the first read on: one at a time. */
  taking: boolean;
  /** Its ffmpegs (a tile's, a sprite's): killed when the session ends. */
  running: Set<SupervisedProcess>;
  /** Tiles came or went since the newest sprite was built. */
  changed: boolean;
  building: Promise<Sprite | undefined> | undefined;
  /** Newest last. */
  sprites: Sprite[];
  /** Tiles out of the window whose files a running build may still read: deleted after it. */
  doomed: number[];
  warned: boolean;
  ended: boolean;
  dropTimer: NodeJS.Timeout | undefined;
}

export interface LiveStoryboardOptions {
  hlsDir: string;
  registry: ProcessRegistry;
  ffmpegPath: string | undefined;
  now?: () => number;
}

export class LiveStoryboard implements LiveSessionObserver {
  /** By playback id. */
  private readonly boards = new Map<string, Board>();
  private readonly now: () => number;
  /** Sprite ids: unique on this node across sessions and restarts. */
  private readonly idPrefix = crypto.randomBytes(3).toString("hex");
  private builds = 0;
  private activeBuilds = 0;
  private readonly waitingBuilds: (() => void)[] = [];

  constructor(private readonly o: LiveStoryboardOptions) {
    this.now = o.now ?? Date.now;
  }

  sessionLive(info: LiveSessionInfo): void {
    const old = this.boards.get(info.playbackId);
    if (old?.sessionId === info.sessionId) return;
    // The stream's previous session's window is gone with its playlists.
    if (old) this.drop(old);
    if (info.dvrSeconds <= 0 || !this.o.ffmpegPath) return;
    const dir = path.join(this.o.hlsDir, info.playbackId, STORYBOARD_DIR);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    const board: Board = {
      ...{ playbackId: info.playbackId, sessionId: info.sessionId, dir, log: info.log, tiles: [], origin: undefined, lastTileAt: undefined, edge: 0, size: undefined },
      ...{ taking: false, running: new Set(), changed: true, building: undefined, sprites: [], doomed: [], warned: false, ended: false, dropTimer: undefined },
    };
    this.boards.set(info.playbackId, board);
  }

  sessionEnded(info: LiveSessionInfo): void {
    const board = this.boards.get(info.playbackId);
    if (board?.sessionId !== info.sessionId || board.ended) return;
    board.ended = true;
    for (const child of board.running) child.kill();
    // Its viewers may seek in the ended window for a while; then the board and its files go.
    board.dropTimer = setTimeout(() => this.current(board) && this.drop(board), Math.min(ENDED_KEEP_MS, info.dvrSeconds * 1000));
    board.dropTimer.unref();
    const ended = [...this.boards.values()].filter((b) => b.ended);
    // Map order is the order sessions started: the oldest ended boards go first.
    for (const b of ended.slice(0, Math.max(0, ended.length - ENDED_BOARDS_MAX))) this.drop(b);
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
      board.doomed.push(...dropped.map((t) => t.msn));
      if (!board.building) this.deleteDoomed(board);
    }
    // One tile at a time, marked before the first await: a busy machine skips tiles rather than queueing ffmpegs.
    if (board.taking || !takesTile(board.lastTileAt, segment.programDateTime)) return;
    board.taking = true;
    board.lastTileAt = segment.programDateTime;
    void this.take(board, segment)
      .catch((err: unknown) => this.failed(board, { err }))
      .finally(() => (board.taking = false));
  }

  has(playbackId: string): boolean {
    return this.boards.has(playbackId);
  }

  /** The storyboard's WebVTT, naming the sprite of its tiles by `spriteUrl(id)`; undefined: no DVR here, or no tile yet. */
  async vtt(playbackId: string, spriteUrl: (id: string) => string): Promise<string | undefined> {
    const board = this.boards.get(playbackId);
    if (!board) return undefined;
    const sprite = await this.newest(board);
    return sprite && renderStoryboardVtt(sprite.tiles, sprite.size, spriteUrl(sprite.id), board.origin);
  }

  /** Sprite `id`'s file while it is kept (the newest, built first if tiles changed, when no id is given); undefined: none. */
  async sprite(playbackId: string, id?: string): Promise<string | undefined> {
    const board = this.boards.get(playbackId);
    if (!board) return undefined;
    if (id === undefined) return (await this.newest(board))?.file;
    return board.sprites.find((s) => s.id === id)?.file;
  }

  /** The newest sprite, built first when tiles changed since (one build of a board's at a time). */
  private newest(board: Board): Promise<Sprite | undefined> {
    const newest = board.sprites[board.sprites.length - 1];
    if (board.building) return board.building;
    if (!board.size || board.tiles.length === 0) return Promise.resolve(undefined);
    if (!board.changed && newest) return Promise.resolve(newest);
    // A folder gone under it (the next session's start) costs the answer, never an unhandled rejection.
    board.building = this.withBuildSlot(() => this.build(board))
      .catch((err: unknown) => (this.failed(board, { err }), undefined))
      .then((built) => built ?? board.sprites[board.sprites.length - 1])
      .finally(() => {
        board.building = undefined;
        this.deleteDoomed(board);
      });
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
    const at = tileDate(board.tiles[board.tiles.length - 1]?.programDateTime, segment.programDateTime);
    board.origin ??= at;
    board.tiles.push({ msn: segment.seq, programDateTime: at, duration: Math.max(segment.duration, (board.edge - at) / 1000) });
    board.changed = true;
  }

  /** A sprite of the board's tiles as they are now, under a new id; undefined: it failed (or the board went). */
  private async build(board: Board): Promise<Sprite | undefined> {
    if (!this.current(board) || !board.size || board.tiles.length === 0) return undefined;
    const size = board.size;
    const tiles = spriteTiles(board.tiles, size);
    board.changed = false;
    const id = `${this.idPrefix}${(++this.builds).toString(36)}`;
    const file = path.join(board.dir, spriteFile(id));
    const list = path.join(board.dir, `sprite-${id}.ffconcat`);
    try {
      await fs.promises.writeFile(list, spriteList(tiles.map((t) => this.tileFile(board, t.msn))));
      const end = await this.run(board, buildSpriteArgs({ list, count: tiles.length, size, output: file }), SPRITE_TIMEOUT_MS, "ffmpeg storyboard sprite");
      if (end.code !== 0 || !this.current(board)) {
        board.changed = true;
        if (!end.requested) this.failed(board, { code: end.code, signal: end.signal, stderr: end.stderrTail.slice(-2) });
        await fs.promises.rm(file, { force: true });
        return undefined;
      }
    } finally {
      await fs.promises.rm(list, { force: true });
    }
    const sprite: Sprite = { id, file, tiles, size, replacedAt: undefined };
    this.keep(board, sprite);
    return sprite;
  }

  /** Adds a new sprite; replaced ones are served SPRITE_KEEP_MS more, then deleted. */
  private keep(board: Board, sprite: Sprite): void {
    const now = this.now();
    const previous = board.sprites[board.sprites.length - 1];
    if (previous) previous.replacedAt = now;
    const expired = (s: Sprite) => s.replacedAt !== undefined && s.replacedAt + SPRITE_KEEP_MS < now;
    const gone = board.sprites.filter(expired);
    board.sprites = [...board.sprites.filter((s) => !expired(s)), sprite];
    for (const s of gone) void fs.promises.rm(s.file, { force: true });
  }

  /** Runs `build` when one of the node's MAX_BUILDS slots is free. */
  private async withBuildSlot<T>(build: () => Promise<T>): Promise<T> {
    if (this.activeBuilds < MAX_BUILDS) this.activeBuilds++;
    // A finishing build hands its slot on: the count stays.
    else await new Promise<void>((resolve) => this.waitingBuilds.push(resolve));
    try {
      return await build();
    } finally {
      const next = this.waitingBuilds.shift();
      if (next) next();
      else this.activeBuilds--;
    }
  }

  private deleteDoomed(board: Board): void {
    for (const msn of board.doomed.splice(0)) void fs.promises.rm(this.tileFile(board, msn), { force: true });
  }

  /** One ffmpeg of the board's, killed after `timeoutMs` or at the session's end; `input` is written to its stdin. */
  private async run(board: Board, args: string[], timeoutMs: number, name: string, input?: Buffer) {
    const child = spawnSupervised(this.o.registry, { command: this.o.ffmpegPath!, args, log: board.log, name, inputPipe: input !== undefined, tailLines: 5 });
    board.running.add(child);
    const timer = setTimeout(() => child.kill(), timeoutMs);
    child.stdin?.end(input);
    try {
      return await child.ended;
    } finally {
      clearTimeout(timer);
      board.running.delete(child);
    }
  }

  /** Still the stream's board: a next session's start, or the ended board's time running out, drops it (and its folder). */
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
    clearTimeout(board.dropTimer);
    for (const child of board.running) child.kill();
    this.boards.delete(board.playbackId);
    fs.rmSync(board.dir, { recursive: true, force: true });
  }
}
