// Is there room to write media and state, and what happens when there is not.

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../log";

/** Below this, live segments and recordings would soon fail to write. */
export const MIN_FREE_BYTES = 64 * 1024 * 1024;

/** Free space on the data directory's file system → a reason it is not enough (pure). */
export function judgeFreeSpace(freeBytes: number, minFreeBytes = MIN_FREE_BYTES): string | void {
  if (freeBytes < minFreeBytes) return `only ${Math.floor(freeBytes / (1024 * 1024))} MiB free on the data directory (at least ${minFreeBytes / (1024 * 1024)} MiB needed)`;
}

/**
 * The folder media is written to (`DATA_DIR/hls`) takes a file, and its file system has room:
 * a full or read-only disk ends live sessions, and should take this server out of rotation.
 */
export function probeStorageWritable(dir: string, minFreeBytes = MIN_FREE_BYTES): string | void {
  const probe = path.join(dir, `.readyz-${process.pid}`);
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(probe, "ok");
    fs.rmSync(probe, { force: true });
  } catch (err) {
    return `cannot write to ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
  }
  const stats = fs.statfsSync(dir);
  return judgeFreeSpace(stats.bavail * stats.bsize, minFreeBytes);
}

/** How often live storage is probed while the server runs. */
export const STORAGE_WATCH_MS = 2000;

/** Space held back in the data directory, given up the moment storage fails (see StorageWatch). */
export const STORAGE_RESERVE_BYTES = 16 * 1024 * 1024;

/** Recovery asks for this much more than threshold + reserve, so that holding the reserve does not fail it again. */
const RESERVE_MARGIN_BYTES = 4 * 1024 * 1024;

export interface StorageWatchOptions {
  /** The folder media is written to. */
  dir: string;
  minFreeBytes: number;
  /** A file of `bytes` kept on the database's file system; none when absent. */
  reserve?: { file: string; bytes: number };
  onChange(problem: string | undefined): void;
  log: Logger;
  everyMs?: number;
}

/**
 * Probes storage every couple of seconds and reports each change, so that live sessions end
 * when the disk fills or turns read-only (with the reason) rather than waiting for ffmpeg to
 * trip on it.
 *
 * A disk can also fill faster than any probe: then SQLite could not record those ends. So a
 * reserve file holds some space back, and is deleted first thing when storage fails: that
 * room is what lets the session ends, their stream.idle and the recordings' state be written.
 * Storage counts as back only with room for the reserve again, so it does not flap.
 */
export class StorageWatch {
  private problem: string | undefined;
  private reserved = false;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly o: StorageWatchOptions) {
    this.problem = this.probe(0);
    // A reserve left by a run that died on a failing disk is the room this start needs.
    if (this.problem) this.releaseReserve();
    else if (!this.probe(this.recoveryBytes)) this.holdReserve();
    this.timer = setInterval(() => {
      try {
        this.check();
      } catch (err) {
        o.log.error({ err }, "storage check failed");
      }
    }, o.everyMs ?? STORAGE_WATCH_MS);
    this.timer.unref();
  }

  /** The problem found by the last probe (every STORAGE_WATCH_MS, or a check() since). */
  get current(): string | undefined {
    return this.problem;
  }

  /** Probes now (a publish and a failed write want the answer of this moment). */
  check(): string | undefined {
    const failing = this.problem !== undefined;
    const problem = this.probe(0) ?? (failing ? this.probe(this.recoveryBytes) : undefined);
    this.problem = problem;
    if (problem && !failing) {
      this.releaseReserve();
      this.o.onChange(problem);
    } else if (!problem && failing) {
      this.holdReserve();
      this.o.onChange(undefined);
    } else if (!problem && !this.reserved && !this.probe(this.recoveryBytes)) {
      this.holdReserve();
    }
    return problem;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Room wanted beyond the threshold before the reserve is held (again): it, and a margin. */
  private get recoveryBytes(): number {
    return this.o.reserve ? this.o.reserve.bytes + RESERVE_MARGIN_BYTES : 0;
  }

  /** The problem with `extraBytes` more wanted free; undefined when there is none. */
  private probe(extraBytes: number): string | undefined {
    return probeStorageWritable(this.o.dir, this.o.minFreeBytes + extraBytes) || undefined;
  }

  private holdReserve(): void {
    const r = this.o.reserve;
    if (!r || this.reserved) return;
    try {
      // Random bytes: zeros reserve nothing on a compressing file system (ZFS, btrfs).
      if (fs.statSync(r.file, { throwIfNoEntry: false })?.size !== r.bytes) fs.writeFileSync(r.file, crypto.randomBytes(r.bytes));
      this.reserved = true;
    } catch (err) {
      this.o.log.warn({ err, file: r.file }, "could not set storage aside for a full disk");
      this.removeReserveFile();
    }
  }

  private releaseReserve(): void {
    const r = this.o.reserve;
    if (!r) return;
    if (this.removeReserveFile() && this.reserved) {
      this.o.log.warn({ file: r.file, bytes: r.bytes }, "storage failing: released the reserve so that state can still be written");
    }
    this.reserved = false;
  }

  /** A read-only or immutable directory refuses this too: logged, never thrown. */
  private removeReserveFile(): boolean {
    try {
      fs.rmSync(this.o.reserve!.file, { force: true });
      return true;
    } catch (err) {
      this.o.log.error({ err, file: this.o.reserve!.file }, "could not release the storage reserve");
      return false;
    }
  }
}
