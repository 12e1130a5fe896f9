import path from "node:path";
import { firstMsnFor, LivePackager, renderMediaPlaylist, type HlsSegment, type LiveHls } from "../hls";
import type { Logger } from "../log";
import { AUDIO_BITRATE, HlsFiles, writeAtomically, type LiveStills, type StoredSegment } from "../media";
import type { Rendition, SegmentCounters } from "../shapes";
import type { LiveSessionInfo } from "./observer";

export interface SessionHlsOptions {
  info: LiveSessionInfo;
  sessionId: string;
  /** The session's start (ms): its first media sequence number. */
  startedAt: number;
  lowLatency: boolean;
  segmentSeconds: number;
  listSize: number;
  /** Live DVR: seconds of the stream its playlists list (0: off). */
  dvrSeconds?: number;
  /** The ffmpeg has `-movflags cmaf` (exact part timing). */
  ffmpegCmaf?: boolean;
  liveHls: LiveHls;
  log: Logger;
  /** The pipeline run writing now (0, then one more per restart or reconnect). */
  run(): number;
  /** A segment is on disk (segment, init, then the plain playlist naming it), with the run that made it. */
  onStored(rendition: Rendition, segment: HlsSegment, stored: StoredSegment, run: number): void;
  /** A write failed: the session ends; later writes are skipped. */
  onWriteFailed(err: unknown): void;
}

/**
 * A live session's HLS output: its packager (answered from memory through the registry) and
 * the files it leaves on disk. Segment writes go through the thread pool, in order, so players'
 * requests are not held up by the disk; whatever needs the files waits for them (`afterWrites`).
 */
export class SessionHls {
  readonly packager: LivePackager;
  private readonly files: HlsFiles;
  private writes: Promise<void> = Promise.resolve();
  private failed = false;
  /** Takes the thumbnail when asked, for a run that does not keep one (set by the runs). */
  stills: LiveStills | undefined;

  constructor(private readonly o: SessionHlsOptions) {
    this.files = new HlsFiles(o.info.hlsDir);
    this.packager = new LivePackager({
      renditions: o.info.renditions,
      lowLatency: o.lowLatency,
      segmentTarget: o.segmentSeconds,
      windowSegments: o.listSize,
      // Unique per session: a cached URL of an earlier session never names this one's media.
      uriPrefix: o.sessionId.slice(0, 8),
      firstMsn: firstMsnFor(o.startedAt),
      ...(o.dvrSeconds ? { dvrSeconds: o.dvrSeconds } : {}),
      exactParts: o.ffmpegCmaf !== false,
      audioBitrate: AUDIO_BITRATE,
      onSegment: (r, segment, retired) => this.store(r, segment, retired),
      warn: (fields, message) => o.log.warn(fields, message),
    });
    o.liveHls.set(o.info.playbackId, this.packager, async () => this.stills?.fresh());
  }

  /** A new session starts from a clean folder. Throws when the disk refuses. */
  resetFiles(): void {
    this.files.reset(this.o.info.renditions);
  }

  /** The master on disk: for the recording's copy and for players once the session has ended. Throws when the disk refuses. */
  writeMaster(): void {
    writeAtomically(path.join(this.o.info.hlsDir, "index.m3u8"), this.packager.master()!);
  }

  /** Runs `fn` once the segments completed so far are on disk. */
  afterWrites(fn: () => void): void {
    void this.writes.then(fn);
  }

  /** Players find the session no more (suspended, deleted, ended). */
  unpublish(): void {
    this.o.liveHls.delete(this.o.info.playbackId, this.packager);
    this.stills?.stop();
  }

  /** The session's end: waiting players get the ENDLIST; `then` runs once the last segments are on disk. */
  end(then: () => void): void {
    this.packager.end();
    this.afterWrites(() => {
      this.unpublish();
      then();
    });
  }

  private store(r: Rendition, segment: HlsSegment, retired: HlsSegment[]): void {
    const track = this.packager.tracks[r.index]!;
    // Served from disk only when no packager answers: it cannot hold a request, so it offers none.
    const playlist = renderMediaPlaylist(track, { targetDuration: this.packager.targetDuration, serverControl: false });
    const run = this.o.run();
    this.writes = this.writes.then(async () => {
      if (this.failed) return;
      let stored: StoredSegment;
      try {
        stored = await this.files.write(r, segment, retired, playlist);
      } catch (err) {
        this.failed = true;
        return this.o.onWriteFailed(err);
      }
      this.o.onStored(r, segment, stored, run);
    });
  }
}

/** What a rendition's complete segment adds to the session's counters (pure): the first rendition stands for the source. */
export function segmentCounters(r: Rendition, segment: Pick<HlsSegment, "duration" | "size">): SegmentCounters {
  const source = r.index === 0;
  return {
    sourceSegments: source ? 1 : 0,
    sourceSegmentsDuration: source ? segment.duration : 0,
    sourceBytes: source && !r.encode ? segment.size : 0,
    transcodedSegments: r.encode ? 1 : 0,
    transcodedSegmentsDuration: r.encode ? segment.duration : 0,
    transcodedBytes: r.encode ? segment.size : 0,
  };
}
