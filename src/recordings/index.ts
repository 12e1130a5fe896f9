export { expectedFinalizeJobs, finalizeJob, Recorder, FINALIZE_QUEUE, type FinalizeJob } from "./recorder";
export { DEFAULT_SPACE_RETRY_MS, FINALIZE_ATTEMPTS, RecordingFinalizer, type FinalizeDeps } from "./finalize";
export { DEFAULT_REMUX_STALL_MS } from "./remux";
export { retentionCutoff, startRetention, sweepRecordings } from "./retention";
export { RecordingUrlSigner, RECORDING_SECRET_FILE, signPlaylistUris, SIGNATURE_PARAM } from "./urlSigning";
