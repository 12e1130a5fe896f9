export { LocalRecordingStore, type RecordingStore, type StoredFile } from "./recordingStore";
export { recordingPrefix, S3RecordingStore, s3Client, type S3Settings } from "./s3";
