import type { SegmentCounters } from "../../shapes";

/** The segment counter columns that streams and sessions rows both carry. */
export interface CounterColumns {
  source_segments: number;
  transcoded_segments: number;
  source_segments_duration: number;
  transcoded_segments_duration: number;
  source_bytes: number;
  transcoded_bytes: number;
}

export function countersOf(r: CounterColumns): SegmentCounters {
  return {
    sourceSegments: r.source_segments,
    transcodedSegments: r.transcoded_segments,
    sourceSegmentsDuration: r.source_segments_duration,
    transcodedSegmentsDuration: r.transcoded_segments_duration,
    sourceBytes: r.source_bytes,
    transcodedBytes: r.transcoded_bytes,
  };
}
