export { PullIngest, type PullBackoff, type PullIngestDeps, type PulledStream, type PullStatus } from "./pullIngest";
export { buildPullArgs, inputAudioCodec, type PullArgsInput } from "./pullArgs";
