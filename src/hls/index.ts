// onair's own HLS packager (issue 15), landing in steps. First: the fragmented-MP4 reader.
export { aacObjectType, childBoxes, Fmp4Error, Fmp4Splitter, parseFragment, parseInit } from "./boxes";
export type { FragmentInfo, FragmentTrack, Fmp4Piece, InitTrack, TrackDefaults } from "./boxes";
