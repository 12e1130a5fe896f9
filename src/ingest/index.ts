export { RtmpIngest, INGEST_APP, streamKeyFromPath, type IngestHandlers } from "./rtmpIngest";
