import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";

/**
 * Where recordings live beyond the node that recorded them. Every node writes a recording's
 * files to its own `recordings/<sessionId>/` folder first (the recorder links live segments
 * there; finalize writes the MP4 there). With object storage, each file is then copied to the
 * bucket under `recordings/<sessionId>/`, a segment and its init before the playlist that
 * names them; a node that did not record a session (finalize on a worker, playback on any API
 * node, after the recording node died) reads it from the bucket.
 */
export interface RecordingStore {
  readonly kind: "local" | "s3";
  /**
   * Copies files of the session's local folder (paths relative to it) out, in order, after the
   * ones given earlier for the same session. Resolves when they are stored; never rejects
   * (a failure is logged; the file stays on the recording node).
   */
  saved(sessionId: string, files: string[]): Promise<void>;
  /** As `saved`, but rejects when a file could not be stored (finalize: not ready until the bucket has it). */
  put(sessionId: string, files: string[]): Promise<void>;
  /**
   * Fills the session's local folder from the store with what this node lacks: each rendition's
   * playlist (`renditions`: their indexes) and the files it names, and the master.
   */
  fetch(sessionId: string, localDir: string, renditions: number[]): Promise<void>;
  /** Whether the store holds anything of the session. */
  exists(sessionId: string, localDir: string): Promise<boolean>;
  /** A file of the recording (`range`: an HTTP Range header), to serve; undefined when there is none. */
  open(sessionId: string, localDir: string, file: string, range?: string): Promise<StoredFile | undefined>;
  /** Deletes the recording (retention). */
  delete(sessionId: string, localDir: string): Promise<void>;
}

export interface StoredFile {
  body: Readable;
  /** Bytes of the body. */
  size: number | undefined;
  /** Content-Range, when a range was asked for and given. */
  range?: string;
}

/** Local disk only: the folder is the recording. */
export class LocalRecordingStore implements RecordingStore {
  readonly kind = "local" as const;

  async saved(): Promise<void> {}

  async put(): Promise<void> {}

  async fetch(): Promise<void> {}

  async exists(_sessionId: string, localDir: string): Promise<boolean> {
    return fs.existsSync(localDir);
  }

  async open(_sessionId: string, localDir: string, file: string): Promise<StoredFile | undefined> {
    const full = path.join(localDir, file);
    try {
      const st = await fs.promises.stat(full);
      if (!st.isFile()) return undefined;
      return { body: fs.createReadStream(full), size: st.size };
    } catch {
      return undefined;
    }
  }

  async delete(_sessionId: string, localDir: string): Promise<void> {
    await fs.promises.rm(localDir, { recursive: true, force: true });
  }
}
