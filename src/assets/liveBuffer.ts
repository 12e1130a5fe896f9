import fs from "node:fs";
import path from "node:path";
import type { LiveSessionInfo, LiveSessionObserver, WrittenSegment } from "../sessions";
import { CLIP_RENDITION } from "./sources";
import type { TimedSegment } from "./timeline";

// The live window clips reach back into. The live playlist keeps HLS_LIST_SIZE segments (6 s by
// default) and deletes older ones; clips want "the last minutes". So each live session's
// source-rendition segments are also hard-linked here, `DATA_DIR/assets/live/<sessionId>/`,
// with a dated playlist of them, for CLIP_WINDOW_SECONDS: a link costs no copy, only keeps
// the file a while longer. The folder goes when the session ends (a recorded session's
// recording is clipped from then on).

export type BufferedSegment = Required<TimedSegment>;

/** Keeps the segments ending within `windowSeconds` of the newest one's end (pure); the rest are dropped. */
export function trimWindow(segments: BufferedSegment[], windowSeconds: number): { kept: BufferedSegment[]; dropped: BufferedSegment[] } {
  const last = segments[segments.length - 1];
  if (!last) return { kept: [], dropped: [] };
  const horizon = last.programDateTime + last.duration * 1000 - windowSeconds * 1000;
  const found = segments.findIndex((s) => s.programDateTime + s.duration * 1000 > horizon);
  const first = found < 0 ? segments.length : found;
  return { kept: segments.slice(first), dropped: segments.slice(0, first) };
}

/** The buffer's playlist (pure): each segment dated, its init and seams named (parseTimedPlaylist reads it back). */
export function renderBufferPlaylist(segments: BufferedSegment[]): string {
  const target = Math.max(1, Math.ceil(Math.max(0, ...segments.map((s) => s.duration))));
  const lines = ["#EXTM3U", "#EXT-X-VERSION:7", `#EXT-X-TARGETDURATION:${target}`, "#EXT-X-MEDIA-SEQUENCE:0"];
  let map: string | undefined;
  segments.forEach((s, i) => {
    if (i > 0 && s.discontinuity) lines.push("#EXT-X-DISCONTINUITY");
    if (s.map !== map) lines.push(`#EXT-X-MAP:URI="${s.map}"`);
    map = s.map;
    lines.push(`#EXT-X-PROGRAM-DATE-TIME:${new Date(s.programDateTime).toISOString()}`, `#EXTINF:${s.duration.toFixed(6)},`, s.uri);
  });
  return lines.join("\n") + "\n";
}

class SessionBuffer {
  segments: BufferedSegment[] = [];
  lastRun: number | undefined;
  constructor(readonly dir: string) {}
}

/**
 * The observer that keeps each live session's clip window on disk. Its file work runs on the
 * thread pool, one segment after another per session: a busy disk must not hold the event loop
 * that answers players' part requests at every segment boundary.
 */
export class LiveClipBuffer implements LiveSessionObserver {
  private readonly sessions = new Map<string, SessionBuffer>();
  /** Per session: the file work of its segments so far, in order. */
  private readonly work = new Map<string, Promise<void>>();

  constructor(
    /** `DATA_DIR/assets/live` */
    readonly dir: string,
    readonly windowSeconds: number,
  ) {}

  /** Where a session's buffer is (its playlist is `index.m3u8` there). */
  sessionDir(sessionId: string): string {
    return path.join(this.dir, sessionId);
  }

  /** At start: buffers of a previous run belong to sessions that are over. */
  reset(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  sessionLive(): void {}

  segmentWritten(info: LiveSessionInfo, segment: WrittenSegment): void {
    if (segment.rendition.index !== CLIP_RENDITION || this.windowSeconds <= 0) return;
    let buf = this.sessions.get(info.sessionId);
    if (!buf) {
      buf = new SessionBuffer(this.sessionDir(info.sessionId));
      this.sessions.set(info.sessionId, buf);
    }
    const kept = buf;
    this.enqueue(info.sessionId, () => this.keep(info, kept, segment));
  }

  sessionEnded(info: LiveSessionInfo): void {
    const buf = this.sessions.get(info.sessionId);
    this.sessions.delete(info.sessionId);
    const dir = buf?.dir ?? this.sessionDir(info.sessionId);
    this.enqueue(info.sessionId, () => fs.promises.rm(dir, { recursive: true, force: true }), true);
  }

  private enqueue(sessionId: string, job: () => Promise<void>, last = false): void {
    const next = (this.work.get(sessionId) ?? Promise.resolve()).then(job).catch(() => undefined);
    this.work.set(sessionId, next);
    if (last) void next.then(() => this.work.get(sessionId) === next && this.work.delete(sessionId));
  }

  private async keep(info: LiveSessionInfo, buf: SessionBuffer, segment: WrittenSegment): Promise<void> {
    try {
      await fs.promises.mkdir(buf.dir, { recursive: true });
      await link(segment.map.file, path.join(buf.dir, segment.map.uri));
      await link(segment.file, path.join(buf.dir, segment.uri));
      const seam = buf.lastRun !== undefined && buf.lastRun !== segment.run;
      buf.lastRun = segment.run;
      buf.segments.push({
        uri: segment.uri,
        duration: segment.duration,
        map: segment.map.uri,
        discontinuity: seam,
        programDateTime: segment.programDateTime,
      });
      const { kept, dropped } = trimWindow(buf.segments, this.windowSeconds);
      buf.segments = kept;
      const maps = new Set(kept.map((s) => s.map));
      for (const d of dropped) {
        await fs.promises.rm(path.join(buf.dir, d.uri), { force: true });
        if (!maps.has(d.map)) await fs.promises.rm(path.join(buf.dir, d.map), { force: true });
      }
      const playlist = path.join(buf.dir, "index.m3u8");
      await fs.promises.writeFile(`${playlist}.tmp`, renderBufferPlaylist(kept));
      await fs.promises.rename(`${playlist}.tmp`, playlist);
    } catch (err) {
      // A full or failing disk costs clips of this segment, never the live stream.
      info.log.warn({ err, segment: segment.uri }, "could not keep a segment for clips");
    }
  }
}

async function link(from: string, to: string): Promise<void> {
  try {
    await fs.promises.link(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return;
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw err;
    await fs.promises.copyFile(from, to);
  }
}
