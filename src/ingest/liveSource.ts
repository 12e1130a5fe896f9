import { encodeAmf0, type Amf0Value } from "../rtmp";
import type { SourceTrack } from "../shapes";
import { isAudioSequenceHeader, isVideoKeyframe, isVideoSequenceHeader } from "./publishStats";

export { isAudioSequenceHeader, isVideoSequenceHeader } from "./publishStats";
import { sourceTrack } from "./trackFacts";

// One live publish as its local readers (the pipeline's ffmpeg, a multistream push) receive
// it: every media message as it arrives, and, for a reader that joins late or restarts, what
// a decoder needs first: the metadata, the codecs' sequence headers, and the group of pictures
// since the newest keyframe, so it starts at once instead of waiting for the next keyframe.

/** A message as the publisher sent it: its RTMP type, timestamp (ms) and body. */
export interface RelayedMedia {
  kind: "video" | "audio" | "data";
  timestamp: number;
  body: Buffer;
  /** Video of a track other than the default one (an encoder's ladder); undefined: track 0. */
  track?: number;
}

/** Where a reader's copy goes (the pipe into a pipeline's or a push's ffmpeg). */
export interface SourceReader {
  /** Writes without waiting; false when the reader can take no more (it has gone). */
  sendMedia(media: RelayedMedia): boolean;
  /** The publish is over: the reader is told the stream ended, and is let go. */
  endPlay(): void;
  /** Let go at once, with no end of stream (it fell too far behind). */
  cut(): void;
  /** Bytes written to it and not yet sent: how far it lags. */
  readonly bufferedBytes: number;
  /** The video track it reads (audio and data are every reader's); undefined: the default, 0. */
  readonly track?: number;
}

/**
 * The group of pictures kept for joining readers is dropped past this size (a publisher whose
 * keyframes are far apart, or never come): a reader then waits for the next keyframe.
 */
export const GOP_CACHE_MAX_BYTES = 32 * 1024 * 1024;

/**
 * Nor is it kept past this long (ms): a track of an encoder's ladder that stopped sending video
 * would otherwise keep its last keyframe and every audio message since.
 */
export const GOP_CACHE_MAX_MS = 60_000;

/** Video tracks of one publish kept apart (E-RTMP allows 256; OBS sends up to five): others are dropped. */
export const MAX_VIDEO_TRACKS = 8;

/** A data message as a player expects it: `name` first, without the `@setDataFrame` a publisher puts before metadata. */
export function dataMessage(timestamp: number, name: string, values: Amf0Value[]): RelayedMedia {
  return { kind: "data", timestamp, body: encodeAmf0([name, ...values]) };
}

/** What a reader joining on one video track is handed first: its decoder configuration and its group of pictures (with the audio). */
interface TrackCache {
  videoHeader: RelayedMedia | undefined;
  /** What the header says (codec, size), read once when it comes: publisher stats ask often. */
  facts: SourceTrack | undefined;
  gop: RelayedMedia[];
  gopBytes: number;
}

const trackOf = (media: RelayedMedia) => media.track ?? 0;

export class LiveSource {
  private metadata: RelayedMedia | undefined;
  private audioHeader: RelayedMedia | undefined;
  /** By video track: the default (0), and each other track of an encoder's ladder. */
  private readonly tracks = new Map<number, TrackCache>([[0, { videoHeader: undefined, facts: undefined, gop: [], gopBytes: 0 }]]);
  private readonly members = new Set<SourceReader>();
  private ended = false;

  get readers(): ReadonlySet<SourceReader> {
    return this.members;
  }

  /** The default track's group of pictures kept for joining readers, in bytes: what a reader is handed at once. */
  get cachedBytes(): number {
    return this.tracks.get(0)!.gopBytes;
  }

  /** One message of the publish: kept as the joining readers need it, and sent to every reader of it. */
  push(media: RelayedMedia): void {
    if (this.ended) return;
    if (media.kind === "video" && !this.tracks.has(trackOf(media)) && this.tracks.size >= MAX_VIDEO_TRACKS) return;
    this.remember(media);
    for (const reader of this.members) {
      if (media.kind === "video" && trackOf(media) !== (reader.track ?? 0)) continue;
      if (!reader.sendMedia(media)) this.members.delete(reader);
    }
  }

  /** A data message; the newest onMetaData is also sent first to each joining reader. */
  pushData(timestamp: number, name: string, values: Amf0Value[]): void {
    const media = dataMessage(timestamp, name, values);
    if (name === "onMetaData") this.metadata = media;
    this.push(media);
  }

  /** A reader joins: it gets what a decoder needs to start now, then every message. */
  add(reader: SourceReader): void {
    if (this.ended) return reader.endPlay();
    const track = this.tracks.get(reader.track ?? 0);
    const start = [this.metadata, track?.videoHeader, this.audioHeader, ...(track?.gop ?? [])].filter((m): m is RelayedMedia => m !== undefined);
    for (const media of start) if (!reader.sendMedia(media)) return;
    this.members.add(reader);
  }

  remove(reader: SourceReader): void {
    this.members.delete(reader);
  }

  /** The publish is over: every reader is told, and none may join. */
  end(): void {
    this.ended = true;
    const readers = [...this.members];
    this.members.clear();
    for (const track of this.tracks.values()) track.gop = [];
    for (const reader of readers) reader.endPlay();
  }

  /** The video tracks seen so far: 0, then each other track of an encoder's ladder that sent its configuration. */
  get videoTracks(): SourceTrack[] {
    return [...this.tracks].filter(([id, t]) => id === 0 || t.videoHeader !== undefined).map(([id, t]) => t.facts ?? { id });
  }

  private remember(media: RelayedMedia): void {
    if (media.kind === "data") return;
    if (media.kind === "audio") {
      if (isAudioSequenceHeader(media.body)) this.audioHeader = media;
      // Audio goes with every track's pictures.
      else for (const track of this.tracks.values()) keep(track, media, false);
      return;
    }
    let track = this.tracks.get(trackOf(media));
    if (!track) this.tracks.set(trackOf(media), (track = { videoHeader: undefined, facts: undefined, gop: [], gopBytes: 0 }));
    if (isVideoSequenceHeader(media.body)) {
      // Pictures cached under another configuration do not decode with this one: a reader joining
      // now waits for the next keyframe rather than being handed them after it.
      if (track.videoHeader && !track.videoHeader.body.equals(media.body)) {
        track.gop = [];
        track.gopBytes = 0;
      }
      track.videoHeader = media;
      track.facts = sourceTrack(trackOf(media), media.body);
    } else keep(track, media, isVideoKeyframe(media.body));
  }
}

/** A message into a track's group of pictures: a keyframe starts it anew; nothing before the first one decodes. */
function keep(track: TrackCache, media: RelayedMedia, keyframe: boolean): void {
  if (keyframe) {
    track.gop = [];
    track.gopBytes = 0;
  } else if (track.gop.length === 0) {
    return;
  }
  track.gopBytes += media.body.length;
  const oldest = track.gop[0];
  if (track.gopBytes > GOP_CACHE_MAX_BYTES || (oldest !== undefined && media.timestamp - oldest.timestamp > GOP_CACHE_MAX_MS)) {
    track.gop = [];
    track.gopBytes = 0;
    return;
  }
  track.gop.push(media);
}
