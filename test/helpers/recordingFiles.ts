import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Store } from "../../src/db";
import { parseMediaPlaylist } from "../../src/media";
import { buildVodPlaylist } from "../../src/recordings/vod";
import { FFMPEG } from "./media";

// Large recordings, quickly: a few seconds of testsrc2 are encoded once at a high bitrate
// (noise keeps x264 from compressing it: about 42 Mb/s at 720p), then looped with -c copy into
// 2 s segments, which runs at disk speed and keeps timestamps rising across the loops. What
// comes out is what the recorder leaves: one rendition folder, its EVENT playlist, no master.

function ffmpeg(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(FFMPEG, ["-hide_banner", "-nostdin", "-loglevel", "error", ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    p.stderr.on("data", (c: Buffer) => (err += c.toString()));
    p.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg exit ${code}: ${err.slice(-500)}`))));
  });
}

/** 6 s of 720p video and AAC audio in MPEG-TS, about 32 MB. */
export async function makeClip(file: string): Promise<void> {
  await ffmpeg([
    "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", "6", "-vf", "noise=alls=30:allf=t", "-c:v", "libx264", "-preset", "ultrafast", "-g", "60",
    "-b:v", "40M", "-maxrate", "40M", "-bufsize", "20M", "-c:a", "aac", "-f", "mpegts", "-y", file,
  ]);
}

export interface WrittenRecording {
  /** the segments' total size */
  bytes: number;
  /** the playlist's total duration, seconds */
  seconds: number;
  segments: number;
}

/**
 * Writes rendition 0 of a recording into `dir` (the session's recording folder): `clip` looped
 * until the segments hold at least `minBytes`.
 */
export async function writeRecording(dir: string, clip: string, minBytes: number): Promise<WrittenRecording> {
  const folder = path.join(dir, "0");
  fs.mkdirSync(folder, { recursive: true });
  const loops = Math.max(0, Math.ceil(minBytes / fs.statSync(clip).size) - 1);
  const live = path.join(folder, "live.m3u8");
  await ffmpeg([
    "-stream_loop", String(loops), "-i", clip, "-c", "copy",
    "-f", "hls", "-hls_time", "2", "-hls_list_size", "0", "-hls_segment_filename", path.join(folder, "s_%05d.ts"), live,
  ]);
  const segments = parseMediaPlaylist(fs.readFileSync(live, "utf8")).segments;
  fs.rmSync(live);
  // As the recorder writes it while the session is live; finalize closes it.
  fs.writeFileSync(path.join(folder, "index.m3u8"), buildVodPlaylist(segments, false));
  return {
    bytes: segments.reduce((n, s) => n + fs.statSync(path.join(folder, s.uri)).size, 0),
    seconds: segments.reduce((n, s) => n + s.duration, 0),
    segments: segments.length,
  };
}

/** A recorded session that has ended and is not finalized yet (the next start finalizes it). */
export async function endedRecordedSession(store: Store, userName = "rec"): Promise<{ sessionId: string; streamId: string; userId: string }> {
  const user = await store.users.getOrCreate(userName);
  const stream = await store.streams.create({ userId: user.id, name: "long", profiles: [], record: true, playbackPolicy: null });
  const session = await store.sessions.start(stream);
  await store.sessions.end(session.id);
  return { sessionId: session.id, streamId: stream.id, userId: user.id };
}

/** The finalize job's row in the embedded queue's table. */
export function finalizeJobRow(store: Store, sessionId: string): Promise<{ state: string; attempts: number; run_at: number; last_error: string | null } | undefined> {
  return store.db.get("SELECT state, attempts, run_at, last_error FROM queue_jobs WHERE id = ?", [`finalize-${sessionId}`]);
}

/** Free space where tests write their temporary files. */
export function freeBytes(dir: string): number {
  const st = fs.statfsSync(dir);
  return st.bavail * st.bsize;
}
