import fs from "node:fs";
import path from "node:path";
import { variantPlaylist } from "./liveArgs";
import { withEndlist } from "./playlists";

// The HLS files on disk, as the pipeline leaves them for players and recordings.

/** Readers never see a half-written playlist: write aside, then rename over. */
export function writeAtomically(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

/**
 * Ends every rendition playlist in a stream's HLS folder (`<outDir>/<n>/index.m3u8`), so the
 * URL no longer plays as live: ffmpeg writes #EXT-X-ENDLIST when it ends cleanly; after a
 * crash, a kill or a previous run that died, this does.
 */
export function endPlaylists(outDir: string): void {
  let entries: string[];
  try {
    entries = fs.readdirSync(outDir);
  } catch {
    return;
  }
  for (const entry of entries.filter((e) => /^\d+$/.test(e))) {
    const file = variantPlaylist(outDir, { index: Number(entry) });
    try {
      const text = fs.readFileSync(file, "utf8");
      const ended = withEndlist(text);
      if (ended !== text) writeAtomically(file, ended);
    } catch {
      // no playlist was written in that folder: nothing to end
    }
  }
}

