import { z } from "zod";

/** What a stream or session has produced: segments, their seconds and bytes, of the source and of the renditions. */
export interface SegmentCounters {
  sourceSegments: number;
  transcodedSegments: number;
  sourceSegmentsDuration: number;
  transcodedSegmentsDuration: number;
  sourceBytes: number;
  transcodedBytes: number;
}

/** Bytes per second, measured over the last 10 s of a live session. */
export interface LiveRates {
  /** received from the publisher */
  ingestRate: number;
  /** written out by the pipeline (every rendition's segments) */
  outgoingRate: number;
}

/** Not live: 0 rather than left out (the SDK expects numbers). */
export const NO_RATE: LiveRates = { ingestRate: 0, outgoingRate: 0 };

/** What a stream and a session both report of their media: segment counters and live rates. */
export const mediaCounterFields = {
  sourceSegments: z.number(),
  transcodedSegments: z.number(),
  sourceSegmentsDuration: z.number().describe("seconds"),
  transcodedSegmentsDuration: z.number().describe("seconds"),
  sourceBytes: z.number(),
  transcodedBytes: z.number(),
  ingestRate: z.number().describe("bytes per second received from the publisher over the last 10 s; 0 when not live"),
  outgoingRate: z.number().describe("bytes per second the pipeline wrote (every rendition) over the last 10 s; 0 when not live"),
};

/** Segment counters and live rates, as streams and sessions both report them. */
export function mediaCounters(s: SegmentCounters, rates: LiveRates): SegmentCounters & LiveRates {
  const { sourceSegments, transcodedSegments, sourceSegmentsDuration, transcodedSegmentsDuration, sourceBytes, transcodedBytes } = s;
  return { sourceSegments, transcodedSegments, sourceSegmentsDuration, transcodedSegmentsDuration, sourceBytes, transcodedBytes, ...rates };
}
