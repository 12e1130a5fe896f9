import fs from "node:fs";
import path from "node:path";
import type { HlsSegment } from "../hls";
import type { Rendition } from "../shapes";
import { withEndlist } from "./playlists";

// The HLS files on disk, as the packager leaves them for recordings, pushes of a rendition and
// the playlists of ended sessions (live ones are answered from memory).

export const variantDir = (outDir: string, r: Pick<Rendition, "index">) => path.join(outDir, String(r.index));
export const variantPlaylist = (outDir: string, r: Pick<Rendition, "index">) => path.join(variantDir(outDir, r), "index.m3u8");

/** Readers never see a half-written playlist: write aside, then rename over. */
export function writeAtomically(file: string, text: string | Buffer): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

async function writeAtomicallyAsync(file: string, data: string | Buffer): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.promises.writeFile(tmp, data);
  await fs.promises.rename(tmp, file);
}

/** Where a complete segment and its init segment are on disk. */
export interface StoredSegment {
  file: string;
  map: { uri: string; file: string };
}

/**
 * A live session's folder: `<outDir>/<rendition>/` holds each complete segment, its init
 * segment and a plain playlist of the window (no parts), written in that order so the playlist
 * never names a file that is not there. Segments that left the grace list are deleted.
 */
export class HlsFiles {
  private readonly maps = new Set<string>();

  constructor(readonly outDir: string) {}

  /** A new session starts from a clean folder: nothing of an earlier session stays listed. */
  reset(renditions: Rendition[]): void {
    fs.rmSync(this.outDir, { recursive: true, force: true });
    for (const r of renditions) fs.mkdirSync(variantDir(this.outDir, r), { recursive: true });
  }

  /**
   * Writes on the thread pool (the event loop keeps answering players meanwhile); callers
   * write one segment after another. Rejects when the disk refuses (the session decides).
   */
  async write(rendition: Rendition, segment: HlsSegment, retired: HlsSegment[], playlist: string): Promise<StoredSegment> {
    const dir = variantDir(this.outDir, rendition);
    const mapFile = path.join(dir, segment.map.uri);
    const mapKey = `${rendition.index}/${segment.map.uri}`;
    if (!this.maps.has(mapKey)) {
      await writeAtomicallyAsync(mapFile, segment.map.bytes);
      this.maps.add(mapKey);
    }
    const file = path.join(dir, segment.uri);
    await writeAtomicallyAsync(file, segment.bytes!);
    await writeAtomicallyAsync(path.join(dir, "index.m3u8"), playlist);
    await Promise.all(retired.map((old) => fs.promises.rm(path.join(dir, old.uri), { force: true })));
    return { file, map: { uri: segment.map.uri, file: mapFile } };
  }
}

/**
 * Ends every rendition playlist in a stream's HLS folder (`<outDir>/<n>/index.m3u8`), so the
 * URL no longer plays as live: the packager writes #EXT-X-ENDLIST when the session ends with a
 * segment to write; otherwise, and after a crash, this does.
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
