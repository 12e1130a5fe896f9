import { encodeAudioTag, encodeVideoTag, type AudioPacket, type AudioTag, type VideoPacket, type VideoTag } from "../rtmp";

// What the pipeline's ffmpeg can read of what a publisher sends. Its FLV reader knows FLV's own
// codecs only (AVC video, AAC audio, in the pre-2023 tag form); Enhanced RTMP carries the same
// H.264 and AAC in another form (a FourCC header, OBS's "enhanced" output and every track of its
// multitrack ladder), which is rewritten here into the legacy one, bit for bit the same samples.
// HEVC and AV1, which FLV cannot carry, go on in the enhanced form (one track, no multitrack
// wrapper): the pipeline reads those as fragmented MP4 (mp4Pipe.ts).
// Only the default track goes on: track 0, which a plain (not multitrack) packet is, and which
// every player takes. OBS sends its top rendition that way and each other rendition as a
// one-track multitrack message of its own id, so those are dropped, not mixed into the source.
// Pure: a parsed tag in, the codec's name and the body to relay out.

export interface PipelineForm {
  /** The codec's name, as the media check and the refusals say it; undefined for a message with no codec (a command, silence). */
  codec: string | undefined;
  /** The message as the pipeline reads it; undefined when there is nothing of it to relay (an HDR metadata packet, a codec it cannot read). */
  body: Buffer | undefined;
}

const VIDEO_NAMES: Readonly<Record<string, string>> = { avc1: "H.264", hvc1: "HEVC", av01: "AV1", vp09: "VP9" };
const AUDIO_NAMES: Readonly<Record<string, string>> = { mp4a: "AAC", Opus: "Opus", "ac-3": "AC-3", "ec-3": "E-AC-3", fLaC: "FLAC", ".mp3": "MP3" };

const fourCcName = (names: Readonly<Record<string, string>>, fourCc: string) => names[fourCc] ?? `unknown (FourCC ${JSON.stringify(fourCc)})`;

/** The default track (id 0) of a multitrack message; undefined when the message carries other tracks only. */
function defaultTrack<T extends { trackId: number }>(tracks: readonly T[]): T | undefined {
  return tracks.find((t) => t.trackId === 0);
}

/**
 * Codecs FLV cannot carry, relayed in their enhanced single-track form: the pipeline reads them
 * from fragmented MP4 (`mp4Pipe.ts`), not from FLV.
 */
const ENHANCED_ONLY: ReadonlySet<string> = new Set(["hvc1", "av01"]);

function videoPacketForm(packet: VideoPacket): PipelineForm {
  if (packet.kind === "unsupported") return { codec: fourCcName(VIDEO_NAMES, packet.fourCc), body: undefined };
  const codec = fourCcName(VIDEO_NAMES, packet.codec);
  if (packet.kind !== "config" && packet.kind !== "frame" && packet.kind !== "end") return { codec, body: undefined };
  if (packet.codec === "avc1") return { codec, body: encodeVideoTag({ ...packet, legacy: true }) };
  return { codec, body: ENHANCED_ONLY.has(packet.codec) ? encodeVideoTag(packet) : undefined };
}

/** A video message in the form the pipeline reads. `body` is the message as sent. */
export function videoForPipeline(tag: VideoTag, body: Buffer): PipelineForm {
  switch (tag.kind) {
    case "command":
      return { codec: undefined, body };
    case "legacy":
      return { codec: LEGACY_VIDEO_NAMES[tag.codecId] ?? `unknown (FLV codec id ${tag.codecId})`, body };
    case "multitrack": {
      const track = defaultTrack(tag.tracks);
      return track ? videoPacketForm(track.packet) : { codec: undefined, body: undefined };
    }
    default:
      return "legacy" in tag && tag.legacy ? { codec: "H.264", body } : videoPacketForm(tag);
  }
}

/** A video track other than the default one, in the single-track enhanced form its own readers take. */
export interface TrackForm {
  trackId: number;
  body: Buffer;
}

const TRACK_CODECS: ReadonlySet<string> = new Set(["avc1", "hvc1", "av01"]);

/**
 * The tracks of a multitrack message other than the default one (an encoder's ladder: OBS's
 * enhanced broadcasting), each as a single-track packet: their readers package them as
 * renditions of their own (mp4Pipe.ts), or, for a stream with profiles, ffmpeg copies an H.264
 * one into a rung (so H.264 goes in the legacy form its FLV reader knows, as track 0's does).
 * Configurations and frames only, of the codecs the default track may have; nothing for any
 * other message.
 */
export function otherVideoTracks(tag: VideoTag): TrackForm[] {
  if (tag.kind !== "multitrack") return [];
  const out: TrackForm[] = [];
  for (const { trackId, packet } of tag.tracks) {
    if (trackId === 0 || packet.kind === "unsupported" || (packet.kind !== "config" && packet.kind !== "frame") || !TRACK_CODECS.has(packet.codec)) continue;
    out.push({ trackId, body: encodeVideoTag(packet.codec === "avc1" ? { ...packet, legacy: true } : packet) });
  }
  return out;
}

function audioPacketForm(packet: AudioPacket): PipelineForm {
  if (packet.kind === "unsupported") return { codec: fourCcName(AUDIO_NAMES, packet.fourCc), body: undefined };
  const codec = fourCcName(AUDIO_NAMES, packet.codec);
  const relayed = packet.codec === "mp4a" && (packet.kind === "config" || packet.kind === "frame");
  return { codec, body: relayed ? encodeAudioTag({ ...packet, legacy: true }) : undefined };
}

/** An audio message in the form the pipeline reads. `body` is the message as sent. */
export function audioForPipeline(tag: AudioTag, body: Buffer): PipelineForm {
  switch (tag.kind) {
    case "silence":
      return { codec: undefined, body };
    case "legacy":
      return { codec: LEGACY_AUDIO_NAMES[tag.format] ?? `unknown (FLV sound format ${tag.format})`, body };
    case "multitrack": {
      const track = defaultTrack(tag.tracks);
      return track ? audioPacketForm(track.packet) : { codec: undefined, body: undefined };
    }
    default:
      return "legacy" in tag && tag.legacy ? { codec: "AAC", body } : audioPacketForm(tag);
  }
}

/** FLV VideoTagHeader CodecID → name (FLV spec; 12 and 13 are the non-standard HEVC/AV1 extensions). */
const LEGACY_VIDEO_NAMES: Readonly<Record<number, string>> = {
  1: "JPEG",
  2: "Sorenson H.263",
  3: "Screen Video",
  4: "On2 VP6",
  5: "On2 VP6 with alpha",
  6: "Screen Video 2",
  7: "H.264",
  9: "MPEG-4 Part 2",
  12: "HEVC",
  13: "AV1",
};

/** FLV AudioTagHeader SoundFormat → name. */
const LEGACY_AUDIO_NAMES: Readonly<Record<number, string>> = {
  0: "PCM",
  1: "ADPCM",
  2: "MP3",
  3: "PCM little-endian",
  4: "Nellymoser 16 kHz",
  5: "Nellymoser 8 kHz",
  6: "Nellymoser",
  7: "G.711 A-law",
  8: "G.711 mu-law",
  10: "AAC",
  11: "Speex",
  14: "MP3 8 kHz",
};
