import { readVideoTag } from "../rtmp";
import type { SourceTrack } from "../shapes";
import { recordSize } from "./mp4Pipe";

// What a publish's video track is, read from its decoder configuration (a sequence header as the
// ingest keeps it: legacy AVC or enhanced): the codec and the picture size. A stream with
// profiles takes a track of an encoder's ladder that has a profile's size as that rendition
// instead of encoding it (media/ladder.ts).

/** Track `id`, from its sequence header's body (undefined: none came yet). */
export function sourceTrack(id: number, header: Buffer | undefined): SourceTrack {
  if (!header) return { id };
  let tag;
  try {
    tag = readVideoTag(header);
  } catch {
    return { id };
  }
  const packet = tag.kind === "multitrack" ? tag.tracks[0]?.packet : tag;
  if (!packet || !("kind" in packet) || packet.kind !== "config") return { id };
  const size = recordSize(packet.codec, packet.record);
  return { id, codec: packet.codec, ...(size ? { width: size.width, height: size.height } : {}) };
}
