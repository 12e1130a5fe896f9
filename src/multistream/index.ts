export { MultistreamManager, type MultistreamDeps } from "./manager";
export { RelayPush, type PushAttempt } from "./relay";
export { parseTargetUrl, SRT_OPTIONS, TARGET_SCHEMES, withAddress, type ParsedTargetUrl, type TargetScheme, type TargetUrl } from "./targetUrl";
