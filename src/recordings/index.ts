export { Recorder, FINALIZE_QUEUE, type FinalizeJob } from "./recorder";
export { finalizeHandler, FINALIZE_ATTEMPTS } from "./finalize";
export { retentionCutoff, startRetention, sweepRecordings } from "./retention";
