import type { Writable } from "node:stream";
import type { RelayedMedia, SourceReader } from "./liveSource";

// A local reader that is a pipe, not a connection: a reader process (the pipeline's ffmpeg, a
// push) reads the publish on its stdin, in the form its codec needs (flvPipe.ts, mp4Pipe.ts).
// The pipe's side is the same whatever the form: written without waiting, its unsent bytes
// the reader's lag, ended at the publish's end, destroyed when cut off.

/** What a message becomes on the pipe: its bytes, and why the pipe must end after them, if it must. */
export interface PipeOutput {
  bytes: Buffer[];
  end?: string;
}

export class PipeReader implements SourceReader {
  constructor(
    private readonly into: Writable,
    private readonly form: (media: RelayedMedia) => PipeOutput,
    /** What the form still holds when the publish ends (a part in the making). */
    private readonly held: () => Buffer[] = () => [],
    /** The video track it reads; undefined: the default one. */
    readonly track?: number,
  ) {
    // A reader that exited (EPIPE) is noticed on the next write: it is not an error of ours.
    into.on("error", () => undefined);
  }

  sendMedia(media: RelayedMedia): boolean {
    if (this.into.destroyed || this.into.writableEnded) return false;
    const out = this.form(media);
    for (const bytes of out.bytes) this.into.write(bytes);
    if (out.end === undefined) return true;
    this.into.end();
    return false;
  }

  /** The publish is over: the pipe ends, and the reader finishes as at the end of a file. */
  endPlay(): void {
    if (this.into.destroyed || this.into.writableEnded) return;
    for (const bytes of this.held()) this.into.write(bytes);
    this.into.end();
  }

  /** Cut off (it fell behind): what it has not taken is thrown away. */
  cut(): void {
    this.into.destroy();
  }

  get bufferedBytes(): number {
    return this.into.writableLength;
  }
}
