import crypto from "node:crypto";
import type { Store } from "../db";
import type { Logger } from "../log";
import { signatureHeader, standardWebhooksHeaders, type WebhookSender } from "../webhooks";
import type { WebhookQuestion } from "./gate";

// A `webhook` playback policy: the stream owner's webhook decides who watches. onair POSTs
// `{accessKey, context, timestamp}` to it, signed like an event; a 2xx admits the viewer,
// anything else (or no answer within the sender's timeout) refuses. The gate keeps the answer
// for the policy's refreshInterval.

export function webhookQuestion(store: Store, sender: WebhookSender, log: Logger): WebhookQuestion {
  return async (subject, accessKey) => {
    const webhook = await store.webhooks.getOwned(subject.userId, subject.policy.webhookId);
    if (!webhook) {
      log.warn({ playbackId: subject.playbackId, webhookId: subject.policy.webhookId }, "the webhook of a playback policy is gone: every viewer is refused");
      return false;
    }
    const timestamp = Date.now();
    const body = JSON.stringify({ accessKey, context: subject.policy.webhookContext ?? {}, timestamp });
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "onair" };
    if (webhook.sharedSecret) {
      headers["Livepeer-Signature"] = signatureHeader(body, webhook.sharedSecret, timestamp);
      Object.assign(headers, standardWebhooksHeaders(`access-${crypto.randomUUID()}`, body, webhook.sharedSecret, timestamp));
    }
    const result = await sender.post(webhook.url, body, headers);
    const admitted = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
    if (result.statusCode === undefined) log.warn({ playbackId: subject.playbackId, webhookId: webhook.id, error: result.error, refused: result.refusedDetail }, "the playback policy webhook did not answer: viewer refused");
    return admitted;
  };
}
