export { PullIngest, type PullCaps, type PullIngestDeps, type PulledStream, type PullStatus } from "./pullIngest";
export { buildPullArgs, inputAudioCodec, pullInput, pullTailLine, type PullArgsInput } from "./pullArgs";
export { SourceGateway, type GatewayPull, type GatewayRefusal, type GatewayStats } from "./sourceGateway";
