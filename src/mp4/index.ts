// A fragmented-MP4 writer for coded samples, so a publisher's H.264, HEVC, AV1 or VP9 video and
// AAC or Opus audio (as RTMP and Enhanced RTMP carry them) can feed the transcoder's pipe and the
// LL-HLS packager without passing through FLV, which knows none of them but H.264 and AAC. Pure:
// tracks and samples in, bytes out; no I/O, no clock. The boxes follow ISO/IEC 14496-12 (the
// base format), 14496-15 (avcC, hvcC), the AV1 and VP codec ISOBMFF bindings, and the
// encapsulation of Opus in ISOBMFF.

export { codecString } from "./codecString";
export { opusDops, vpcRecord } from "./configs";
export { fragment, NON_SYNC_SAMPLE_FLAGS, SYNC_SAMPLE_FLAGS } from "./fragment";
export type { Mp4FragmentPart, Mp4Sample } from "./fragment";
export { PartFragmenter, SampleFragmenter } from "./fragmenter";
export type { Fragmenter, FragmenterTrack, TimedSample } from "./fragmenter";
export { initSegment } from "./init";
export type { AudioTrack, Mp4Track, VideoTrack } from "./track";
