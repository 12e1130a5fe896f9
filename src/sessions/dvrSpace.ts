import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../log";
import { dvrCutIssue, planDvrWindows } from "./dvrRoom";
import type { LiveSessionInfo, LiveSessionObserver } from "./observer";

// A node's live DVR windows against its disk. A window is media kept on the data directory
// (every rendition's segments for `dvrWindow` seconds): left alone, a long window on a small
// disk would fill it and end every live session there (StorageWatch). So every few seconds
// the windows are measured against the free space: while there is room they grow to what was
// asked; when there is not, they stop growing (their streams' `issues` say so, with what to
// do), and grow again when room returns. Only when the disk is short of what the windows
// already hold are ended sessions' windows deleted, then live media given back.
//
// A recorded session's window costs nothing here: its recording holds hard links to the same
// files, so neither cutting nor deleting it would free a byte.
//
// An ended session's window stays for clips and late viewers for as long as the window (at
// most ENDED_WINDOW_KEEP_MS), then goes. Those a stopped node left are found at start.

/** A live DVR session as this keeper sees it (a StreamRuntime's). */
export interface DvrSession {
  readonly info: LiveSessionInfo;
  /** The window in force, the seconds listed, and a second's bytes in storage. */
  dvrFootprint(): { window: number; listed: number; bytesPerSecond: number };
  /** Lists `seconds` back; `issue`: why less than asked (none when whole). */
  setDvrWindow(seconds: number, issue: string | undefined): void;
}

export interface DvrSpaceOptions {
  /** `DATA_DIR/hls`: where the windows are. */
  hlsDir: string;
  /** Free space live sessions must keep (STORAGE_MIN_FREE_MB, the reserve): DVR never takes it. */
  keepFreeBytes: number;
  /** The node's live sessions now. */
  sessions(): DvrSession[];
  log: Logger;
  everyMs?: number;
  /** Free bytes on `hlsDir`'s file system (statfs when absent). */
  freeBytes?(dir: string): number;
  now?(): number;
}

/** How often the windows are measured: a window grows by at most this much between two looks. */
export const DVR_SPACE_EVERY_MS = 5000;
/** Room kept beyond `keepFreeBytes`: this many seconds of every live DVR session's media. */
const SLACK_SECONDS = 30;
/** How long an ended session's window stays at most (and never longer than the window itself). */
export const ENDED_WINDOW_KEEP_MS = 60 * 60 * 1000;
/** A playlist left at start that lists more than this is an ended DVR window (without DVR: a few segments). */
const LEFT_WINDOW_MIN_SECONDS = 60;
/** A window being deleted is renamed to this first: a new session of the stream finds the folder free. */
const DROPPING = ".dropping-";
const PLAYBACK_ID = /^[0-9a-z]{16}$/;

interface EndedWindow {
  playbackId: string;
  dir: string;
  /** Its segments' names start with this (the session's): a folder naming others is another session's now. */
  prefix: string;
  endedAt: number;
  keepMs: number;
  /** What deleting it frees (about). */
  bytes: number;
  log: Logger;
}

export class DvrSpace implements LiveSessionObserver {
  private readonly timer: NodeJS.Timeout;
  private readonly ended: EndedWindow[] = [];
  /** By session id: the issue said now, so a change is logged once. */
  private readonly cut = new Map<string, string>();
  /** By session id: the bytes its window held at the last look (what its end leaves on disk). */
  private readonly held = new Map<string, number>();
  /** Bytes of windows being deleted: free already, though the disk does not show it yet. */
  private freeing = 0;

  constructor(private readonly o: DvrSpaceOptions) {
    this.findLeft();
    this.timer = setInterval(() => {
      try {
        this.check();
      } catch (err) {
        o.log.error({ err }, "DVR storage check failed");
      }
    }, o.everyMs ?? DVR_SPACE_EVERY_MS);
    this.timer.unref();
  }

  sessionLive(info: LiveSessionInfo): void {
    // The stream's next session has the folder now: the ended window went with its reset.
    for (let i = this.ended.length - 1; i >= 0; i--) if (this.ended[i]!.playbackId === info.playbackId) this.ended.splice(i, 1);
  }

  sessionEnded(info: LiveSessionInfo): void {
    this.cut.delete(info.sessionId);
    const bytes = this.held.get(info.sessionId) ?? 0;
    this.held.delete(info.sessionId);
    if (info.dvrSeconds <= 0) return;
    const keepMs = Math.min(ENDED_WINDOW_KEEP_MS, info.dvrSeconds * 1000);
    this.ended.push({ playbackId: info.playbackId, dir: info.hlsDir, prefix: info.sessionId.slice(0, 8), endedAt: this.now(), keepMs, bytes, log: info.log });
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Measures now: ended windows past their time go, then live windows are fitted to the room. */
  check(): void {
    const now = this.now();
    for (const e of [...this.ended]) if (now - e.endedAt >= e.keepMs) this.dropEnded(e, "its time after the session's end is over");
    this.fit();
  }

  private fit(): void {
    // Recorded sessions are left out: their recording holds the same files.
    const live = this.o.sessions().filter((s) => s.info.dvrSeconds > 0 && !s.info.record);
    if (live.length === 0) return;
    const footprints = live.map((s) => s.dvrFootprint());
    live.forEach((s, i) => this.held.set(s.info.sessionId, footprints[i]!.listed * footprints[i]!.bytesPerSecond));
    const keep = this.o.keepFreeBytes + SLACK_SECONDS * footprints.reduce((sum, f) => sum + f.bytesPerSecond, 0);
    const needs = live.map((s, i) => ({ asked: s.info.dvrSeconds, listed: footprints[i]!.listed, bytesPerSecond: footprints[i]!.bytesPerSecond }));
    const free = this.freeBytes() + this.freeing;
    // Short of what the windows already hold: ended windows go (oldest first) before live media.
    let room = free - keep;
    while (room < 0 && this.ended.length > 0) room += this.dropEnded(this.ended[0]!, "the disk is short of room for the live DVR windows");
    const windows = planDvrWindows(needs, room);
    live.forEach((s, i) => this.apply(s, windows[i]!, free, keep));
  }

  private apply(s: DvrSession, window: number, free: number, keep: number): void {
    const asked = s.info.dvrSeconds;
    const issue = window < asked ? dvrCutIssue(window, asked, free, keep) : undefined;
    s.setDvrWindow(window, issue);
    const was = this.cut.get(s.info.sessionId);
    if (issue && was === undefined) s.info.log.warn({ dvrWindowSeconds: window, askedSeconds: asked, freeMiB: mib(free) }, "DVR window cut: the disk has no room for the whole window");
    if (!issue && was !== undefined) s.info.log.info({ dvrWindowSeconds: asked }, "DVR window whole again: the disk has room for it");
    if (issue) this.cut.set(s.info.sessionId, issue);
    else this.cut.delete(s.info.sessionId);
  }

  /**
   * Deletes an ended session's window, unless the stream's next session has its folder now;
   * returns the bytes that frees (0 when nothing was deleted).
   */
  private dropEnded(e: EndedWindow, why: string): number {
    this.ended.splice(this.ended.indexOf(e), 1);
    if (this.o.sessions().some((s) => s.info.playbackId === e.playbackId) || !listsSegmentsOf(e.dir, e.prefix)) return 0;
    const aside = `${e.dir}${DROPPING}${e.prefix}`;
    try {
      fs.renameSync(e.dir, aside);
    } catch (err) {
      e.log.warn({ err }, "could not delete the ended session's DVR window");
      return 0;
    }
    e.log.info({ why, mib: mib(e.bytes) }, "the ended session's DVR window is deleted");
    this.remove(aside, e.bytes);
    return e.bytes;
  }

  /** Off the event loop: a 6-hour window is tens of thousands of files. Counted as free meanwhile. */
  private remove(dir: string, bytes = 0): void {
    this.freeing += bytes;
    fs.promises
      .rm(dir, { recursive: true, force: true })
      .catch((err: unknown) => this.o.log.warn({ err, dir }, "could not delete a DVR window"))
      .finally(() => (this.freeing -= bytes));
  }

  /**
   * What a stopped node left: windows it was deleting go now; ended DVR windows (a playlist with
   * its end, listing more than a window without DVR would) are kept their time from their end.
   */
  private findLeft(): void {
    for (const name of safeList(this.o.hlsDir)) {
      const dir = path.join(this.o.hlsDir, name);
      if (name.includes(DROPPING)) this.remove(dir);
      else if (PLAYBACK_ID.test(name)) {
        const left = leftWindow(dir);
        if (left) this.ended.push({ playbackId: name, dir, ...left, log: this.o.log.child({ playbackId: name }) });
      }
    }
    this.ended.sort((a, b) => a.endedAt - b.endedAt);
  }

  private freeBytes(): number {
    if (this.o.freeBytes) return this.o.freeBytes(this.o.hlsDir);
    const st = fs.statfsSync(this.o.hlsDir);
    return st.bavail * st.bsize;
  }

  private now(): number {
    return this.o.now ? this.o.now() : Date.now();
  }
}

const mib = (bytes: number) => Math.floor(bytes / (1024 * 1024));

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** The folder's top playlist still names segments of `prefix` (a session's id's first 8 characters). */
function listsSegmentsOf(dir: string, prefix: string): boolean {
  try {
    return fs.readFileSync(path.join(dir, "0", "index.m3u8"), "utf8").includes(`\n${prefix}_`);
  } catch {
    return false;
  }
}

/** An ended DVR window in `dir` (see findLeft), or undefined. */
function leftWindow(dir: string): Pick<EndedWindow, "prefix" | "endedAt" | "keepMs" | "bytes"> | undefined {
  let text: string;
  let endedAt: number;
  try {
    const file = path.join(dir, "0", "index.m3u8");
    text = fs.readFileSync(file, "utf8");
    endedAt = fs.statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
  const seconds = [...text.matchAll(/^#EXTINF:([\d.]+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
  const prefix = /^([0-9a-z]{8})_\d+\.m4s$/m.exec(text)?.[1];
  if (!text.includes("#EXT-X-ENDLIST") || seconds <= LEFT_WINDOW_MIN_SECONDS || !prefix) return undefined;
  let bytes = 0;
  for (const rendition of safeList(dir)) for (const f of safeList(path.join(dir, rendition))) bytes += statSize(path.join(dir, rendition, f));
  return { prefix, endedAt, keepMs: Math.min(ENDED_WINDOW_KEEP_MS, seconds * 1000), bytes };
}

function statSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}
