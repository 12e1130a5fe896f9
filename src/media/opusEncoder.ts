import type { Logger } from "../log";
import { opusRtpOutput, type OpusRoute } from "./liveArgs";
import { spawnSupervised, type ProcessRegistry, type SupervisedProcess } from "./supervisedProcess";

// WebRTC playback's audio for a run with no ffmpeg of its own (a source packaged as sent): a
// small ffmpeg that reads the publish's audio as FLV on stdin and sends it as Opus RTP, as a
// transcoding run's ffmpeg does beside its ladder. Started while someone watches over WebRTC,
// so a stream played over HLS alone runs no process at all.

/** Unsent input past this: the encoder is not keeping up with live audio (about 4 s of 128 kb/s AAC). */
const MAX_BACKLOG_BYTES = 64 * 1024;

/** The arguments of an Opus encoder of FLV audio on stdin (pure). */
export function buildOpusArgs(audio: OpusRoute): string[] {
  return [
    "-hide_banner", "-nostdin", "-nostats", "-loglevel", "error",
    // The input starts with its decoder configuration: nothing more to wait for.
    "-analyzeduration", "0", "-probesize", "32", "-fflags", "+nobuffer",
    "-f", "flv", "-i", "pipe:0",
    "-map", "0:a:0", ...opusRtpOutput(audio),
  ];
}

export interface OpusEncoderOptions {
  ffmpegPath: string;
  registry: ProcessRegistry;
  log: Logger;
  audio: OpusRoute;
}

export class OpusEncoder {
  private readonly child: SupervisedProcess;
  private dropped = false;

  constructor(private readonly o: OpusEncoderOptions) {
    this.child = spawnSupervised(o.registry, { command: o.ffmpegPath, args: buildOpusArgs(o.audio), log: o.log, name: "ffmpeg opus", inputPipe: true, tailLines: 5 });
    void this.child.ended.then((end) => {
      if (!end.requested && !this.dropped) o.log.warn({ code: end.code, signal: end.signal, stderr: end.stderrTail.slice(-2) }, "WebRTC playback: the Opus encoder exited; viewers get video only until the next one starts");
    });
  }

  /** Whether it still takes input. */
  get running(): boolean {
    return this.child.running && !this.dropped;
  }

  /** FLV bytes of the publish's audio; an encoder this far behind is stopped (its viewers lose the audio, not the video). */
  write(flv: Buffer): void {
    const stdin = this.child.stdin;
    if (!stdin || stdin.destroyed || this.dropped) return;
    if (stdin.writableLength > MAX_BACKLOG_BYTES) {
      this.dropped = true;
      this.o.log.warn({ backlogBytes: stdin.writableLength }, "WebRTC playback: the Opus encoder fell behind the live audio; it is stopped");
      this.child.kill();
      return;
    }
    stdin.write(flv);
  }

  stop(): void {
    void this.child.stop(500);
  }
}
