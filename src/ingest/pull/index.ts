export { PullIngest, type PullBackoff, type PullIngestDeps, type PulledStream } from "./pullIngest";
export { buildPullArgs, inputAudioCodec, type PullArgsInput } from "./pullArgs";
