import { ffconcatQuote } from "./untrustedInput";

// A DVR stream's seek preview (Mux's storyboard.vtt): a small picture every STORYBOARD_SECONDS of
// its window, gathered on request into one sprite, and a WebVTT file whose cues name each
// picture's place in it. Players show the tile of the time under the pointer on the seek bar.

/** One tile per this many seconds of media: a seek bar's hover needs no finer steps. */
export const STORYBOARD_SECONDS = 5;
/** Tiles this wide (the source's aspect kept): a seek preview, not a poster. */
export const STORYBOARD_TILE_WIDTH = 160;
/** The sprite's rows are at most this wide: a window of an hour is 72 rows, 1600 px across. */
export const STORYBOARD_COLUMNS = 10;
/** The folder beside the renditions' the tiles and sprite are written to. */
export const STORYBOARD_DIR = "storyboard";
export const STORYBOARD_VTT = "storyboard.vtt";
/** The sprite's URL; `?v=<id>` names one build of it, the one a VTT's cues were drawn for. */
export const STORYBOARD_SPRITE = "storyboard.jpg";
/** The query parameter naming a sprite build. */
export const STORYBOARD_SPRITE_PARAM = "v";
/**
 * A sheet has at most this many rows: a sprite's height stays far under JPEG's 65,535 px limit
 * (and its decode small), whatever the window's length. An hour's window is 72 rows.
 */
export const STORYBOARD_MAX_ROWS = 100;
/** JPEG's largest side, less a margin. */
const JPEG_MAX_SIDE = 65_500;

/**
 * Segment durations are not exact multiples of a second: a segment starting 4.9 s after the last
 * tile still gets one, or tiles of 1 s segments would fall 6 s apart.
 */
const TILE_SLACK_MS = 200;

export interface Tile {
  /** The segment's media sequence number: the tile's file is `<msn>.jpg`. */
  msn: number;
  /** ms, its segment's EXT-X-PROGRAM-DATE-TIME. */
  programDateTime: number;
  /** Seconds of media it stands for: until the next tile, or the end of the newest segment. */
  duration: number;
}

/** Whether a segment starting at `programDateTime` gets a tile, the last tile being taken at `lastTileAt` (pure). */
export function takesTile(lastTileAt: number | undefined, programDateTime: number): boolean {
  return lastTileAt === undefined || programDateTime - lastTileAt >= STORYBOARD_SECONDS * 1000 - TILE_SLACK_MS || programDateTime < lastTileAt;
}

/** Splits the tiles (oldest first) into those still inside the window ending at `liveEdge` (ms) and those wholly before it (pure). */
export function trimTiles(tiles: Tile[], liveEdge: number, windowSeconds: number): { kept: Tile[]; dropped: Tile[] } {
  const horizon = liveEdge - windowSeconds * 1000;
  const found = tiles.findIndex((t) => t.programDateTime + t.duration * 1000 > horizon);
  const first = found < 0 ? tiles.length : found;
  return { kept: tiles.slice(first), dropped: tiles.slice(0, first) };
}

/** A build's sprite file in the storyboard folder: each build has its own, so none is written over while read. */
export function spriteFile(id: string): string {
  return `sprite-${id}.jpg`;
}

/** A tile's date (pure): its segment's, never before the previous tile's (a wall clock stepped back would turn cues around). */
export function tileDate(previous: number | undefined, programDateTime: number): number {
  return previous === undefined ? programDateTime : Math.max(previous, programDateTime);
}

/** How many tiles one sprite holds at most (pure): STORYBOARD_MAX_ROWS rows, fewer when tiles are tall. */
export function spriteCapacity(size: { height: number }): number {
  const rows = Math.max(1, Math.min(STORYBOARD_MAX_ROWS, Math.floor(JPEG_MAX_SIDE / Math.max(1, size.height))));
  return rows * STORYBOARD_COLUMNS;
}

/**
 * The tiles a sprite draws (pure): all of them while they fit, else every k-th from the oldest
 * (a coarser step for a long window), each standing for the media until the next one drawn, the
 * last until the end of the newest tile: the cues still cover the whole window.
 */
export function spriteTiles(tiles: Tile[], size: { height: number }): Tile[] {
  const capacity = spriteCapacity(size);
  if (tiles.length <= capacity) return tiles;
  const step = Math.ceil(tiles.length / capacity);
  const newest = tiles[tiles.length - 1]!;
  const end = newest.programDateTime + newest.duration * 1000;
  const drawn = tiles.filter((_, i) => i % step === 0);
  return drawn.map((t, i) => ({ ...t, duration: ((drawn[i + 1]?.programDateTime ?? end) - t.programDateTime) / 1000 }));
}

/** The sprite's grid for `count` tiles (pure): one row until it is full, then rows of STORYBOARD_COLUMNS. */
export function spriteGrid(count: number): { columns: number; rows: number } {
  const columns = Math.max(1, Math.min(STORYBOARD_COLUMNS, count));
  return { columns, rows: Math.max(1, Math.ceil(count / columns)) };
}

/** Where tile `index` sits in the sprite (pure), row by row. */
export function tilePosition(index: number, count: number, size: { width: number; height: number }): { x: number; y: number; w: number; h: number } {
  const { columns } = spriteGrid(count);
  return { x: (index % columns) * size.width, y: Math.floor(index / columns) * size.height, w: size.width, h: size.height };
}

/** WebVTT's timestamp (pure): HH:MM:SS.mmm. */
export function vttTime(seconds: number): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}.${pad(ms % 1000, 3)}`;
}

/**
 * The storyboard's WebVTT (pure). Cue times count from `origin` (ms; the session's first tile's
 * program date, so a tile's cue keeps its times as older tiles leave the window), which the NOTE
 * gives: a player maps them to the playlist's EXT-X-PROGRAM-DATE-TIME. A cue ends where the next
 * begins, so the seek bar has no gaps; no cue starts before the one above it.
 */
export function renderStoryboardVtt(tiles: Tile[], size: { width: number; height: number }, sprite = STORYBOARD_SPRITE, origin = tiles[0]?.programDateTime): string {
  if (tiles.length === 0 || origin === undefined) return "WEBVTT\n";
  const lines = ["WEBVTT", "", `NOTE program-date-time ${new Date(origin).toISOString()}`, ""];
  let start = 0;
  tiles.forEach((t, i) => {
    start = Math.max(start, (t.programDateTime - origin) / 1000);
    const next = tiles[i + 1];
    const end = next ? (next.programDateTime - origin) / 1000 : start + t.duration;
    const p = tilePosition(i, tiles.length, size);
    lines.push(`${vttTime(start)} --> ${vttTime(Math.max(end, start + 0.001))}`, `${sprite}#xywh=${p.x},${p.y},${p.w},${p.h}`, "");
  });
  return lines.join("\n");
}

const QUIET = ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "error", "-y"];
/** mjpeg's quantizer: tiles are looked at for a moment, at 160 px. */
const JPEG_OUT = ["-c:v", "mjpeg", "-q:v", "7", "-threads", "1", "-update", "1", "-f", "image2"];

/**
 * One tile of a segment written to ffmpeg's stdin after its init (pure): only its first
 * keyframe is decoded (`-skip_frame nokey`), which every segment starts with.
 */
export function buildTileArgs(output: string): string[] {
  return [
    ...QUIET,
    "-skip_frame", "nokey", "-f", "mov", "-i", "pipe:0",
    "-map", "0:v:0", "-frames:v", "1", "-vf", `scale=w='min(${STORYBOARD_TILE_WIDTH},iw)':h=-2`,
    ...JPEG_OUT, output,
  ];
}

/** The ffconcat list of the tiles' files, oldest first (pure). */
export function spriteList(files: string[]): string {
  return ["ffconcat version 1.0", ...files.map((f) => `file ${ffconcatQuote(f)}`), ""].join("\n");
}

/**
 * The sprite of the tiles a list names (pure). Each tile is scaled to the size the VTT announces
 * (a source that changed size mid-session would otherwise break the grid); `tile` fills the grid.
 */
export function buildSpriteArgs(o: { list: string; count: number; size: { width: number; height: number }; output: string }): string[] {
  const { columns, rows } = spriteGrid(o.count);
  return [
    ...QUIET,
    "-f", "concat", "-safe", "0", "-i", o.list,
    "-vf", `scale=${o.size.width}:${o.size.height},setsar=1,tile=${columns}x${rows}`, "-frames:v", "1",
    ...JPEG_OUT, o.output,
  ];
}

/** A JPEG's picture size from its start-of-frame marker (pure); undefined if none is found. */
export function jpegSize(bytes: Buffer): { width: number; height: number } | undefined {
  let i = 2;
  while (i + 9 < bytes.length) {
    if (bytes[i] !== 0xff) return undefined;
    const marker = bytes[i + 1]!;
    const length = bytes.readUInt16BE(i + 2);
    // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: bytes.readUInt16BE(i + 5), width: bytes.readUInt16BE(i + 7) };
    }
    i += 2 + length;
  }
  return undefined;
}
