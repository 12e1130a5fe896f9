export { SrtIngest, type SrtIngestDeps, type SrtStream } from "./srtIngest";
