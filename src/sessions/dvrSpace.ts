import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../log";
import { dvrCutIssue, planDvrWindows } from "./dvrRoom";
import type { LiveSessionInfo, LiveSessionObserver } from "./observer";

// A node's live DVR windows against its disk. A window is media kept on the data directory
// (every rendition's segments for `dvrWindow` seconds): left alone, a long window on a small
// disk would fill it and end every live session there (StorageWatch). So every few seconds
// the windows are measured against the free space: those that fit are kept whole, the others
// are cut (their streams' `issues` say so, with what to do) and grow back when room returns.
// An ended session's window stays for clips and late viewers for a while, then goes; when room
// is short, ended windows go first.

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
/** A window being deleted is renamed to this first: a new session of the stream finds the folder free. */
const DROPPING = ".dropping-";

interface EndedWindow {
  info: LiveSessionInfo;
  endedAt: number;
}

export class DvrSpace implements LiveSessionObserver {
  private readonly timer: NodeJS.Timeout;
  private readonly ended: EndedWindow[] = [];
  /** By session id: the issue said now, so a change is logged once. */
  private readonly cut = new Map<string, string>();

  constructor(private readonly o: DvrSpaceOptions) {
    // Windows a stopped node was deleting.
    for (const name of safeList(o.hlsDir).filter((n) => n.includes(DROPPING))) this.remove(path.join(o.hlsDir, name));
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
    for (let i = this.ended.length - 1; i >= 0; i--) if (this.ended[i]!.info.playbackId === info.playbackId) this.ended.splice(i, 1);
  }

  sessionEnded(info: LiveSessionInfo): void {
    this.cut.delete(info.sessionId);
    if (info.dvrSeconds > 0) this.ended.push({ info, endedAt: this.now() });
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Measures now: ended windows past their time go, then live windows are fitted to the room. */
  check(): void {
    const now = this.now();
    for (const e of [...this.ended]) if (now - e.endedAt >= Math.min(ENDED_WINDOW_KEEP_MS, e.info.dvrSeconds * 1000)) this.dropEnded(e, "its time after the session's end is over");
    const live = this.o.sessions().filter((s) => s.info.dvrSeconds > 0);
    if (live.length === 0) return;
    const footprints = live.map((s) => s.dvrFootprint());
    const slack = SLACK_SECONDS * footprints.reduce((sum, f) => sum + f.bytesPerSecond, 0);
    const keep = this.o.keepFreeBytes + slack;
    let free = this.freeBytes();
    const needs = live.map((s, i) => ({ asked: s.info.dvrSeconds, listed: footprints[i]!.listed, bytesPerSecond: footprints[i]!.bytesPerSecond }));
    let windows = planDvrWindows(needs, free - keep);
    // Short of room: ended windows go before a live one is cut.
    while (windows.some((w, i) => w < needs[i]!.asked) && this.ended.length > 0) {
      this.dropEnded(this.ended[0]!, "room is short for live DVR windows");
      free = this.freeBytes();
      windows = planDvrWindows(needs, free - keep);
    }
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

  /** Deletes an ended session's window, unless the stream's next session has its folder now. */
  private dropEnded(e: EndedWindow, why: string): void {
    this.ended.splice(this.ended.indexOf(e), 1);
    const dir = e.info.hlsDir;
    if (this.o.sessions().some((s) => s.info.playbackId === e.info.playbackId) || !listsSession(dir, e.info.sessionId)) return;
    const aside = `${dir}${DROPPING}${e.info.sessionId}`;
    try {
      fs.renameSync(dir, aside);
    } catch (err) {
      return e.info.log.warn({ err }, "could not delete the ended session's DVR window");
    }
    e.info.log.info({ why }, "the ended session's DVR window is deleted");
    this.remove(aside);
  }

  /** Off the event loop: a 6-hour window is tens of thousands of files. */
  private remove(dir: string): void {
    fs.promises.rm(dir, { recursive: true, force: true }).catch((err: unknown) => this.o.log.warn({ err, dir }, "could not delete a DVR window"));
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

/** The folder's top playlist still names the session's segments (their names carry its id's first 8 characters). */
function listsSession(dir: string, sessionId: string): boolean {
  try {
    return fs.readFileSync(path.join(dir, "0", "index.m3u8"), "utf8").includes(`${sessionId.slice(0, 8)}_`);
  } catch {
    return false;
  }
}
