export { addDelivery, firstAttempt, storedEvent, WebhookDeliverer, WEBHOOK_DELIVERY_QUEUE } from "./deliver";
export type { DeliveryJob, DeliverySettings } from "./deliver";
export { resendLoggedEvent } from "./resend";
export { judgeAttempt, nextRetryDelay, SPEC_SCHEDULE } from "./retry";
export type { AttemptFailure, RetrySchedule, Verdict } from "./retry";
export { signatureHeader, verifySignature } from "./signature";
export { RESPONSE_BODY_LIMIT } from "./send";
export { startWebhookHistoryRetention } from "./retention";
