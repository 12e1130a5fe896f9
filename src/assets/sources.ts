import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import type { SessionRecord } from "../db";
import { parseFragment, parseInit, type InitTrack } from "../hls";
import type { RecordingStore } from "../storage";
import { coveredRange, dateSegments, parseTimedPlaylist, planClip, type ClipPlan, type TimedSegment } from "./timeline";

// Where a clip's media is: the live window on this node's disk (the packager leaves each
// complete segment, its init and a dated playlist of the window in `hls/<playbackId>/<n>/`),
// or the session's recording (local, or fetched from the bucket). Both hold the same segment
// files (the recorder hard-links the live ones), so either serves the same cut.

/** The rendition clips are cut from: the source (passthrough) or the ladder's first, its best. */
export const CLIP_RENDITION = 0;

export interface SourcePaths {
  /** `DATA_DIR/hls` */
  hlsDir: string;
  /** `DATA_DIR/recordings` */
  recordingsDir: string;
  /** The recordings' store (local disk or the bucket). */
  recordings: RecordingStore;
  /** `DATA_DIR/assets/live`: live sessions' clip windows (LiveClipBuffer); absent: the live playlist's window only. */
  liveBufferDir?: string;
}

export type SourceKind = "live" | "recording";

export interface ClipSource {
  kind: SourceKind;
  plan: ClipPlan;
  /** The folder the plan's segment and init names are in (the recording's: filled from the bucket first when needed). */
  dir: string;
}

export type ResolveResult = { ok: true; source: ClipSource } | { ok: false; available: { kind: SourceKind; from: number; to: number }[] };

/**
 * The live window's dated segments of rendition 0 and their folder: the session's clip buffer
 * (CLIP_WINDOW_SECONDS) or the live playlist's folder (the stream's DVR window, kept there; after
 * the session's end, while its DVR window is kept), whichever reaches further back, when it
 * holds this session's media (the packager names a session's media `<first 8 of its id>_…`: an
 * earlier session's is not this one's).
 */
export function readLiveWindow(paths: SourcePaths, playbackId: string, sessionId: string): { segments: Required<TimedSegment>[]; dir: string } | undefined {
  const prefix = `${sessionId.slice(0, 8)}_`;
  const dirs = [...(paths.liveBufferDir ? [path.join(paths.liveBufferDir, sessionId)] : []), path.join(paths.hlsDir, playbackId, String(CLIP_RENDITION))];
  let best: { segments: Required<TimedSegment>[]; dir: string } | undefined;
  for (const dir of dirs) {
    let text: string;
    try {
      text = fs.readFileSync(path.join(dir, "index.m3u8"), "utf8");
    } catch {
      continue;
    }
    const segments = parseTimedPlaylist(text);
    if (segments.length === 0 || !segments.every((s) => s.uri.startsWith(prefix) && s.programDateTime !== undefined)) continue;
    const dated = segments as Required<TimedSegment>[];
    if (!best || dated[0]!.programDateTime < best.segments[0]!.programDateTime) best = { segments: dated, dir };
  }
  return best;
}

async function readText(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The recording's dated segments of rendition 0. A recording's playlist carries no dates: they
 * come from the live window where the two share segments (exact), else from the session's start
 * (the first segment is written about a second after the publish: clips of such a recording
 * may start that much early).
 */
export async function readRecording(paths: SourcePaths, session: SessionRecord, live: Required<TimedSegment>[] | undefined): Promise<Required<TimedSegment>[] | undefined> {
  if (!session.record) return undefined;
  const file = await paths.recordings.open(session.id, path.join(paths.recordingsDir, session.id), `${CLIP_RENDITION}/index.m3u8`);
  if (!file) return undefined;
  const segments = parseTimedPlaylist(await readText(file.body));
  if (segments.length === 0) return undefined;
  const known = new Map((live ?? []).map((s) => [s.uri, s.programDateTime] as const));
  return dateSegments(segments, session.createdAt, known);
}

/**
 * Where [startMs, endMs] of the session can be cut from: the live window first (it is on disk
 * already), else the recording. Not ok: neither holds the whole range; `available` says what each holds.
 */
export async function resolveClipSource(paths: SourcePaths, session: SessionRecord, playbackId: string, startMs: number, endMs: number): Promise<ResolveResult> {
  const available: { kind: SourceKind; from: number; to: number }[] = [];
  // An ended session's live folder stays while its window is kept (DvrSpace): a clip right after the end reaches back as far.
  const live = readLiveWindow(paths, playbackId, session.id);
  if (live) {
    const planned = planClip(live.segments, startMs, endMs, keyframeReader(live.dir));
    if (planned.ok) return { ok: true, source: { kind: "live", plan: planned.plan, dir: live.dir } };
    if (planned.available) available.push({ kind: "live", ...planned.available });
  }
  const recorded = await readRecording(paths, session, live?.segments);
  if (recorded) {
    const dir = path.join(paths.recordingsDir, session.id, String(CLIP_RENDITION));
    const planned = planClip(recorded, startMs, endMs, keyframeReader(dir));
    if (planned.ok) return { ok: true, source: { kind: "recording", plan: planned.plan, dir } };
    const range = coveredRange(recorded);
    if (range) available.push({ kind: "recording", ...range });
  }
  return { ok: false, available };
}

/** "the live window holds 2026-…Z to 2026-…Z (ms a to b)" for each source (pure). */
export function describeAvailable(available: { kind: SourceKind; from: number; to: number }[]): string {
  if (available.length === 0) return "nothing of this session is available to clip (it is not live on this server and has no recording)";
  return available
    .map((a) => `${a.kind === "live" ? "the live window" : "the recording"} holds ${new Date(a.from).toISOString()} to ${new Date(a.to).toISOString()} (startTime ${a.from} to endTime ${a.to})`)
    .join("; ");
}

/**
 * Whether a segment in `dir` starts on a keyframe, read from its first fragment (the moof's
 * first video sample). True when it cannot tell (no video, a file not on this disk, such as a
 * recording in the bucket before it is fetched): the cut then starts where it did before.
 */
export function keyframeReader(dir: string): (s: TimedSegment) => boolean {
  const inits = new Map<string, InitTrack[] | undefined>();
  const tracksOf = (map: string) => {
    if (!inits.has(map)) {
      try {
        inits.set(map, parseInit(fs.readFileSync(path.join(dir, map))));
      } catch {
        inits.set(map, undefined);
      }
    }
    return inits.get(map);
  };
  return (s) => {
    const tracks = tracksOf(s.map);
    const video = tracks?.find((t) => t.handler === "vide");
    if (!tracks || !video) return true;
    try {
      const first = parseFragment(fs.readFileSync(path.join(dir, s.uri)), tracks).tracks.find((t) => t.id === video.id && t.sampleCount > 0);
      return first?.startsWithSync ?? false;
    } catch {
      return true;
    }
  };
}
