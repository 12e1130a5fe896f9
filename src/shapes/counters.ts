/** What a stream or session has produced: segments, their seconds and bytes, of the source and of the renditions. */
export interface SegmentCounters {
  sourceSegments: number;
  transcodedSegments: number;
  sourceSegmentsDuration: number;
  transcodedSegmentsDuration: number;
  sourceBytes: number;
  transcodedBytes: number;
}
