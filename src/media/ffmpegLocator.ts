import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export interface FfmpegLocation {
  path: string;
  /** Where it was found, for the start-up banner. */
  source: "FFMPEG_PATH" | "PATH" | "@ffmpeg-installer/ffmpeg";
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * ffmpeg from FFMPEG_PATH, then PATH (Debian's ffmpeg is the reference build), then the
 * binary of the optional npm dependency, so `npm install && npm start` works without one.
 * An FFMPEG_PATH that does not point at an executable is an error, not a silent fallback.
 */
export function locateFfmpeg(ffmpegPathSetting: string | undefined, envPath = process.env.PATH ?? ""): FfmpegLocation | undefined {
  if (ffmpegPathSetting !== undefined) {
    if (!isExecutable(ffmpegPathSetting)) throw new Error(`FFMPEG_PATH=${ffmpegPathSetting} is not an executable file`);
    return { path: ffmpegPathSetting, source: "FFMPEG_PATH" };
  }
  for (const dir of envPath.split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, "ffmpeg");
    if (isExecutable(candidate)) return { path: candidate, source: "PATH" };
  }
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const shipped = (require("@ffmpeg-installer/ffmpeg") as { path: string }).path;
    if (isExecutable(shipped)) return { path: shipped, source: "@ffmpeg-installer/ffmpeg" };
  } catch {
    // the optional dependency is not installed on this platform
  }
  return undefined;
}

/**
 * Whether this ffmpeg's mp4 muxer has `-movflags cmaf` (4.3 and later). With it, fragments
 * start at time 0 on an exact part grid; without it (an old build), the first part runs a
 * frame long and the packager warns once.
 */
export function ffmpegHasCmaf(ffmpegPath: string): boolean {
  const res = spawnSync(ffmpegPath, ["-hide_banner", "-h", "muxer=mp4"], { encoding: "utf8", timeout: 10_000 });
  return /^\s*cmaf\b/m.test(res.stdout ?? "");
}

/**
 * Whether this ffmpeg has the libopus encoder, which WebRTC playback's audio needs (Debian's
 * and the npm-shipped builds do; a minimal build may not: its WebRTC viewers then get video only).
 */
export function ffmpegHasLibopus(ffmpegPath: string): boolean {
  const res = spawnSync(ffmpegPath, ["-hide_banner", "-h", "encoder=libopus"], { encoding: "utf8", timeout: 10_000 });
  return /^Encoder libopus\b/m.test(res.stdout ?? "");
}
