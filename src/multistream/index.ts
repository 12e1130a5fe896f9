export { MultistreamManager, type MultistreamDeps } from "./manager";
export { parseTargetUrl, SRT_OPTIONS, TARGET_SCHEMES, withAddress, type ParsedTargetUrl, type TargetScheme, type TargetUrl } from "./targetUrl";
export { failuresAfter, retryDelayMs, RETRY_SCHEDULE, type RetrySchedule } from "./backoff";
