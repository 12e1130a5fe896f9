import { area, directory, flag, integer, matching, text, url } from "../declare";

export const storage = area("storage", {
  DATA_DIR: directory({ default: "./storage", doc: "Database (`onair.db`), `hls/`, `recordings/`." }).at("dataDir"),
  // Below this much free space on the data directory, live sessions end and publishes are
  // refused (while SQLite can still record it), and /readyz fails.
  STORAGE_MIN_FREE_MB: integer({
    default: 64,
    min: 0,
    max: 1_000_000,
    unit: "MiB",
    doc: "Free space the data directory must keep. Below it (or when `DATA_DIR/hls` stops taking files) live sessions end with `endReason` `storage unavailable: …`, publishes are refused and `/readyz` fails, until there is room again (this much plus the 16 MiB reserve).",
  }).at("storageMinFreeBytes", (mb) => mb * 1024 * 1024),
  // Recordings in S3-compatible object storage (both set), local disk otherwise.
  S3_ENDPOINT: url({
    protocols: ["http:", "https:"],
    doc: "An S3-compatible server (AWS, MinIO, Garage, Ceph, R2): recordings are copied to `S3_BUCKET` there as they are made and served from there by every node. Both or neither.",
  }),
  S3_BUCKET: matching({
    pattern: /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
    what: "a bucket name (3-63 lower-case letters, digits, . and -)",
    doc: "The bucket on `S3_ENDPOINT`. Both or neither.",
  }),
  S3_REGION: text({ default: "us-east-1", doc: "The bucket's region." }),
  S3_ACCESS_KEY_ID: text({ keepEmpty: true, shown: "`$AWS_ACCESS_KEY_ID`", doc: "The bucket's access key id." }),
  S3_SECRET_ACCESS_KEY: text({ keepEmpty: true, shown: "`$AWS_SECRET_ACCESS_KEY`", doc: "The bucket's secret access key." }),
  S3_FORCE_PATH_STYLE: flag({ default: true, doc: "Path-style URLs (`http://host/bucket/key`) unless `false`." }),
  // 0 keeps recordings forever (the default: deleting a user's media is a choice to make).
  RECORDINGS_RETENTION_DAYS: integer({
    default: 0,
    min: 0,
    max: 36_500,
    unit: "days",
    doc: "Delete recordings whose session ended more than this many days ago (`0`: keep them).",
  }).at("recordingsRetentionDays"),
  // A recording's MP4 remux runs as long as it needs; one that writes nothing for this long is
  // stuck (a hung disk or mount) and is stopped, which counts as a failed attempt.
  FINALIZE_STALL_SECONDS: integer({
    default: 30,
    min: 1,
    max: 3600,
    unit: "seconds",
    doc: "A recording's MP4 remux that makes no progress (writes nothing) for this long is stopped, as a failed attempt. There is no limit on how long a remux that progresses may run.",
  }).at("finalizeStallMs", (s) => s * 1000),
});
