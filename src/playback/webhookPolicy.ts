import crypto from "node:crypto";
import type { Store } from "../db";
import type { Logger } from "../log";
import { signatureHeader, standardWebhooksHeaders, type WebhookSender } from "../webhooks";
import type { WebhookQuestion } from "./gate";

// A `webhook` playback policy: the stream owner's webhook decides who watches. onair POSTs
// `{accessKey, context, timestamp}` to it, signed like an event; a 2xx admits the viewer,
// any other status refuses. No answer within the sender's timeout is no answer (undefined): the
// viewer is told to try again, not refused. The gate keeps the answer for the policy's
// refreshInterval, and bounds how many questions are out (src/playback/questionBudget.ts).

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
    if (result.failure === "refused") {
      // Never to be asked (the outbound policy refuses its address): as if it were gone.
      log.warn({ playbackId: subject.playbackId, webhookId: webhook.id, error: result.error, refused: result.refusedDetail }, "the playback policy webhook cannot be asked: every viewer is refused");
      return false;
    }
    if (result.statusCode === undefined) {
      log.warn({ playbackId: subject.playbackId, webhookId: webhook.id, error: result.error, refused: result.refusedDetail }, "the playback policy webhook did not answer: viewer told to retry");
      return undefined;
    }
    return result.statusCode >= 200 && result.statusCode < 300;
  };
}
