// What the writer is told about a track: its codec, the decoder configuration as the publisher
// sent it, and the few facts a sample entry states beside it.

export interface VideoTrack {
  id: number;
  kind: "video";
  codec: "avc1" | "hvc1" | "av01" | "vp09";
  /** AVCDecoderConfigurationRecord, HEVCDecoderConfigurationRecord, AV1CodecConfigurationRecord or VPCodecConfigurationRecord. */
  config: Buffer;
  width: number;
  height: number;
  /** Units per second of the track's times (90000 is usual for video). */
  timescale: number;
}

export interface AudioTrack {
  id: number;
  kind: "audio";
  codec: "mp4a" | "Opus";
  /** AAC: the AudioSpecificConfig. Opus: an OpusHead (RFC 7845 5.1) or a dOps payload. */
  config: Buffer;
  channels: number;
  sampleRate: number;
  timescale: number;
}

export type Mp4Track = VideoTrack | AudioTrack;
