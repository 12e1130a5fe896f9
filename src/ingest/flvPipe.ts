import type { Writable } from "node:stream";
import { encodeFlvTag, flvHeader, FlvTagType } from "../rtmp";
import type { RelayedMedia, SourceReader } from "./liveSource";

// A local reader that is a pipe, not a connection: the pipeline's ffmpeg (and a source push's,
// a publish relay's) reads the publish as an FLV stream on its stdin. The bytes are those an
// RTMP play would have carried, with no socket, chunking or play-back handshake between the
// ingest and ffmpeg.

const TAG_TYPE = { video: FlvTagType.video, audio: FlvTagType.audio, data: FlvTagType.script } as const;

/** One message as the FLV tag a reader of the pipe gets; the first also carries the file header. */
export function flvBytes(media: RelayedMedia, first: boolean): Buffer {
  // Script data at time 0, as an RTMP play sends it: ffmpeg 5.1's FLV reader makes a phantom
  // subtitle stream of a data tag at any other time.
  const timestamp = media.kind === "data" ? 0 : media.timestamp;
  const tag = encodeFlvTag({ type: TAG_TYPE[media.kind], timestamp, data: media.body });
  // Both flags: ffmpeg's FLV reader makes its streams from the tags, whatever the header says.
  return first ? Buffer.concat([flvHeader({ audio: true, video: true }), tag]) : tag;
}

export class FlvPipeReader implements SourceReader {
  private started = false;

  constructor(private readonly into: Writable) {
    // A reader that exited (EPIPE) is noticed on the next write: it is not an error of ours.
    into.on("error", () => undefined);
  }

  sendMedia(media: RelayedMedia): boolean {
    if (this.into.destroyed || this.into.writableEnded) return false;
    this.into.write(flvBytes(media, !this.started));
    this.started = true;
    return true;
  }

  /** The publish is over: the pipe ends, and ffmpeg finishes as at the end of a file. */
  endPlay(): void {
    if (!this.into.destroyed && !this.into.writableEnded) this.into.end();
  }

  /** Cut off (it fell behind): what it has not taken is thrown away. */
  cut(): void {
    this.into.destroy();
  }

  get bufferedBytes(): number {
    return this.into.writableLength;
  }
}
