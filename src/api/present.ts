import type { WebhookRecord } from "../db";
import type { EventName } from "../shapes";
import type { WebhookJson } from "./schemas/webhook";

// Webhook records → the JSON the API returns; the type comes from the response schema, so the
// OpenAPI document and the bytes on the wire cannot drift apart. Streams, sessions and targets
// are presented in src/shapes, as webhooks and recordings show them too.

export function presentWebhook(w: WebhookRecord): WebhookJson {
  const status: NonNullable<WebhookJson["status"]> = {};
  if (w.lastTriggeredAt !== null) status.lastTriggeredAt = w.lastTriggeredAt;
  if (w.lastFailure) status.lastFailure = w.lastFailure;
  return {
    id: w.id,
    kind: "webhook",
    userId: w.userId,
    name: w.name,
    url: w.url,
    events: w.events as EventName[],
    createdAt: w.createdAt,
    ...(w.sharedSecret !== null ? { sharedSecret: w.sharedSecret } : {}),
    ...(w.streamId !== null ? { streamId: w.streamId } : {}),
    ...(Object.keys(status).length ? { status } : {}),
  };
}
