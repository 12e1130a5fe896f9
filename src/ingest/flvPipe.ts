import type { Writable } from "node:stream";
import { encodeFlvTag, flvHeader, FlvTagType } from "../rtmp";
import type { RelayedMedia } from "./liveSource";
import { PipeReader } from "./pipeReader";

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

/** The publish as FLV, the file header before its first tag; `track`: that video track's pictures (an encoder's ladder), with the audio. */
export class FlvPipeReader extends PipeReader {
  constructor(into: Writable, track?: number) {
    let started = false;
    super(
      into,
      (media) => {
        const bytes = flvBytes(media, !started);
        started = true;
        return { bytes: [bytes] };
      },
      undefined,
      track,
    );
  }
}
