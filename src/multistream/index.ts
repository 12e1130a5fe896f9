export { MultistreamManager, type MultistreamDeps } from "./manager";
export { parseTargetUrl, SRT_OPTIONS, TARGET_SCHEMES, withAddress, type ParsedTargetUrl, type TargetScheme, type TargetUrl } from "./targetUrl";
