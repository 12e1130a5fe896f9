export { PullIngest, type PullBackoff, type PullIngestDeps, type PulledStream, type PullStatus } from "./pullIngest";
export { buildPullArgs, inputAudioCodec, policyRefusal, pullTailLine, type PullArgsInput } from "./pullArgs";
