import fs from "node:fs";
import path from "node:path";
import type { Rendition, SegmentCounters } from "../shapes";
import type { Logger } from "../log";
import { audioCodecString, avcCodecFromSegment, parseInputStreams, type InputStreams } from "./codecs";
import { buildLiveArgs, variantDir, variantPlaylist, type LiveArgsInput } from "./liveArgs";
import { writeAtomically } from "./hlsFiles";
import { buildMasterPlaylist, parseMediaPlaylist, type Variant } from "./playlists";
import { spawnSupervised, type ProcessEnd, type ProcessRegistry, type SupervisedProcess } from "./supervisedProcess";

export const AUDIO_BITRATE = 128_000;

/** What the ffmpeg arguments need (outDir: the master playlist goes there too, as index.m3u8), and more. */
export interface LivePipelineOptions extends Pick<LiveArgsInput, "inputUrl" | "outDir" | "renditions" | "segmentSeconds" | "listSize" | "segmentPrefix"> {
  ffmpegPath: string;
  log: Logger;
  registry: ProcessRegistry;
  /**
   * Every rendition has a first segment from this pipeline, and the master playlist exists:
   * once per pipeline (a resumed one announces again when its own segments are in).
   */
  onPlayable(): void;
  /** ffmpeg's output clock advanced: media seconds written so far by this pipeline. */
  onOutputTime?(seconds: number): void;
  /**
   * Something in the pipeline's own callbacks threw (a storage or database write): the
   * session decides; nothing here ever throws into a timer and takes the process down.
   */
  onFault(err: unknown): void;
  /** New segments since the last report. */
  onProgress(delta: SegmentCounters): void;
  /** Each new segment, complete on disk, in the order of its rendition's playlist. */
  onSegment?(segment: { rendition: Rendition; file: string; uri: string; duration: number; seq: number; bytes: number }): void;
  /** ffmpeg is gone (the playlists stay as it left them: see endPlaylists). Called once. */
  onEnded(end: ProcessEnd): void;
  /**
   * Continue a pipeline of the same session that died: the last segment sequence number seen
   * per rendition. The folder, master playlist and playlists are kept and appended to.
   */
  resumeFrom?: number[];
}

interface VariantState {
  rendition: Rendition;
  lastSeq: number;
  /** The first segment this pipeline wrote for the rendition. */
  first?: { bytes: number; duration: number; codec?: string };
}

/**
 * One run of a live session's media: a single ffmpeg pulling the published stream from the
 * local RTMP server into HLS, watched through the playlists it writes (the files are the truth
 * of what a player can fetch). Counts segments as they appear and writes the master playlist
 * once every rendition has its first segment. The playlists stay open when ffmpeg stops
 * (`omit_endlist`): the session decides whether another run continues them or they end
 * (endPlaylists in hlsFiles).
 */
export class LivePipeline {
  private process: SupervisedProcess | undefined;
  private readonly variants: VariantState[];
  private readonly watchers: fs.FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inputLog = "";
  private playable = false;
  private finished = false;
  private markDone!: () => void;
  /** Resolves once the pipeline has ended and its playlists are final. */
  readonly done = new Promise<void>((resolve) => (this.markDone = resolve));

  constructor(private readonly o: LivePipelineOptions) {
    this.variants = o.renditions.map((rendition, i) => ({ rendition, lastSeq: o.resumeFrom?.[i] ?? -1 }));
  }

  /** The last segment sequence number seen per rendition (for a pipeline that resumes this one). */
  get lastSeqs(): number[] {
    return this.variants.map((v) => v.lastSeq);
  }

  get isPlayable(): boolean {
    return this.playable;
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** Starts ffmpeg. Throws only if the folder cannot be made (the session's start fails). */
  start(): void {
    // A new session starts from a clean folder: no segment of an earlier session stays listed.
    if (!this.o.resumeFrom) fs.rmSync(this.o.outDir, { recursive: true, force: true });
    for (const v of this.variants) fs.mkdirSync(variantDir(this.o.outDir, v.rendition), { recursive: true });

    this.process = spawnSupervised(this.o.registry, {
      command: this.o.ffmpegPath,
      args: buildLiveArgs({ ...this.o, audioBitrate: AUDIO_BITRATE, resume: this.o.resumeFrom !== undefined }),
      // The input is the stream's internal name on the local RTMP server, never its key.
      log: this.o.log,
      name: "ffmpeg live",
      onStderrLine: (line) => {
        if (this.inputLog.length < 20_000) this.inputLog += line + "\n";
      },
      onStdoutLine: (line) => this.progressLine(line),
    });
    for (const v of this.variants) {
      try {
        // inotify wakes the scan as soon as a playlist is renamed into place.
        this.watchers.push(fs.watch(variantDir(this.o.outDir, v.rendition), () => this.scanSoon()));
      } catch {
        // the interval below still finds every segment
      }
    }
    this.timer = setInterval(() => this.scan(), 1000);
    void this.process.ended.then((end) => this.finish(end));
  }

  /** `-progress pipe:1` lines: out_time_us is the furthest any output has written. */
  private progressLine(line: string): void {
    if (!line.startsWith("out_time_us=")) return;
    const us = Number(line.slice(12));
    if (Number.isFinite(us) && us >= 0) this.guard(() => this.o.onOutputTime?.(us / 1e6));
  }

  /** Runs a callback of the session's; a throw is reported, never thrown into a timer. */
  private guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.o.onFault(err);
    }
  }

  /** Stops ffmpeg (it finishes its playlists) and resolves once the pipeline has ended. */
  async stop(graceMs = 3000): Promise<void> {
    if (!this.process) return;
    await this.process.stop(graceMs);
    await this.done;
  }

  private scanPending = false;
  private scanSoon(): void {
    if (this.scanPending || this.finished) return;
    this.scanPending = true;
    setImmediate(() => {
      this.scanPending = false;
      this.scan();
    });
  }

  private scan(): void {
    this.guard(() => this.scanPlaylists());
  }

  /** Reads each variant playlist and reports the segments that appeared since the last scan. */
  private scanPlaylists(): void {
    const delta: SegmentCounters = { sourceSegments: 0, sourceSegmentsDuration: 0, transcodedSegments: 0, transcodedSegmentsDuration: 0, sourceBytes: 0, transcodedBytes: 0 };
    let any = false;
    for (const v of this.variants) {
      const dir = variantDir(this.o.outDir, v.rendition);
      let text: string;
      try {
        text = fs.readFileSync(variantPlaylist(this.o.outDir, v.rendition), "utf8");
      } catch {
        continue;
      }
      for (const seg of parseMediaPlaylist(text).segments) {
        if (seg.seq <= v.lastSeq) continue;
        v.lastSeq = seg.seq;
        const file = path.join(dir, seg.uri);
        const bytes = fileSize(file);
        if (!v.first) v.first = { bytes, duration: seg.duration, codec: readCodec(file) };
        this.o.onSegment?.({ rendition: v.rendition, file, uri: seg.uri, duration: seg.duration, seq: seg.seq, bytes });
        any = true;
        // The first rendition stands for the source: one source segment per segment period.
        if (v.rendition.index === 0) {
          delta.sourceSegments++;
          delta.sourceSegmentsDuration += seg.duration;
          if (!v.rendition.encode) delta.sourceBytes += bytes;
        }
        if (v.rendition.encode) {
          delta.transcodedSegments++;
          delta.transcodedSegmentsDuration += seg.duration;
          delta.transcodedBytes += bytes;
        }
      }
    }
    if (any) this.o.onProgress(delta);
    if (!this.playable && !this.finished && this.variants.every((v) => v.first)) {
      // A resumed pipeline keeps the master its session's players already hold.
      if (!this.o.resumeFrom || !fs.existsSync(path.join(this.o.outDir, "index.m3u8"))) this.writeMaster();
      this.playable = true;
      this.o.onPlayable();
    }
  }

  private writeMaster(): void {
    const input: InputStreams = parseInputStreams(this.inputLog);
    const audio = audioCodecString(input.audio);
    const variants: Variant[] = this.variants.map((v) => {
      const e = v.rendition.encode;
      const measured = v.first && v.first.duration > 0 ? (v.first.bytes * 8) / v.first.duration : 0;
      const nominal = e ? e.bitrate + (input.audio ? AUDIO_BITRATE : 0) : 0;
      const codecs = [v.first?.codec, e ? (input.audio ? "mp4a.40.2" : undefined) : audio].filter((c): c is string => !!c);
      return {
        uri: `${v.rendition.index}/index.m3u8`,
        name: v.rendition.name,
        bandwidth: Math.max(nominal, measured) || 1,
        width: e ? e.width : input.video?.width,
        height: e ? e.height : input.video?.height,
        frameRate: e ? e.fps : input.video?.fps,
        codecs,
      };
    });
    writeAtomically(path.join(this.o.outDir, "index.m3u8"), buildMasterPlaylist(variants));
  }

  private finish(end: ProcessEnd): void {
    if (this.finished) return;
    this.scan();
    this.finished = true;
    clearInterval(this.timer);
    for (const w of this.watchers) w.close();
    this.markDone();
    this.guard(() => this.o.onEnded(end));
  }

}

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

function readCodec(file: string): string | undefined {
  try {
    const fd = fs.openSync(file, "r");
    try {
      const buf = Buffer.alloc(64 * 1024);
      const n = fs.readSync(fd, buf, 0, buf.length, 0);
      return avcCodecFromSegment(buf.subarray(0, n));
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

