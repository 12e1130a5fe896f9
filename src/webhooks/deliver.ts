import { EventEmitter, once } from "node:events";
import { writeWhenStorageAllows, type DeliveryRecord, type EventRecord, type NewDelivery, type Sql, type Store, type Tx, type WebhookLogRecord } from "../db";
import type { Logger } from "../log";
import type { Metrics } from "../metrics";
import type { OutboundPolicy } from "../outbound";
import { enqueueJob, RetryLater, type Job, type NewJob } from "../queue";
import { buildDeliveryBody, type EventName, type RaisedEvent } from "../shapes";
import { judgeAttempt, nextRetryDelay, type RetrySchedule } from "./retry";
import { WebhookSender, type SendResult } from "./send";
import { signatureHeader, standardWebhooksHeaders } from "./signature";

export const WEBHOOK_DELIVERY_QUEUE = "webhook-delivery";

export interface DeliveryJob {
  deliveryId: string;
}

export interface DeliverySettings {
  schedule: RetrySchedule;
  timeoutMs: number;
  /** Which receivers may be connected to: asked again at every attempt. */
  policy: OutboundPolicy;
}

/**
 * Adds a delivery at the end of its lane (one webhook, one stream) and enqueues it if nothing is
 * ahead of it; otherwise the delivery before it enqueues it once settled. Call it inside a store
 * transaction: the delivery and its job commit together. `owner`: the webhook's user, whose
 * turn the job waits for.
 */
export async function addDelivery(tx: Tx, d: NewDelivery, owner: string): Promise<{ delivery: DeliveryRecord; isLaneHead: boolean }> {
  return tx.db.transaction(async (q) => {
    const added = await tx.webhookDeliveries.add(d);
    if (added.isLaneHead) await enqueueDelivery(q, added.delivery.id, owner);
    return added;
  });
}

async function enqueueDelivery(db: Sql, deliveryId: string, owner: string): Promise<void> {
  await enqueueJob<DeliveryJob>(db, WEBHOOK_DELIVERY_QUEUE, deliveryJob(deliveryId, owner));
}

// The delivery id is the job id: enqueueing a delivery twice runs it once.
const deliveryJob = (deliveryId: string, owner: string): NewJob<DeliveryJob> => ({ id: deliveryId, data: { deliveryId }, owner });

/** The delivery jobs that must exist: one per lane with a pending delivery (for `JobQueue.expect`). */
export async function expectedDeliveryJobs(store: Store, limit: number): Promise<NewJob<DeliveryJob>[]> {
  return (await store.webhookDeliveries.laneHeads(limit)).map((h) => deliveryJob(h.id, h.owner));
}

export function storedEvent(e: EventRecord): RaisedEvent {
  return {
    id: e.id,
    name: e.name as EventName,
    createdAt: e.createdAt,
    stream: JSON.parse(e.streamJson) as RaisedEvent["stream"],
    payload: JSON.parse(e.payloadJson) as RaisedEvent["payload"],
  };
}

// In-process notice that a delivery's attempt was logged: what a resend request waits for.
const attemptLogged = new WeakMap<Sql, EventEmitter>();
function attemptEvents(db: Sql): EventEmitter {
  let e = attemptLogged.get(db);
  if (!e) {
    attemptLogged.set(db, (e = new EventEmitter()));
    e.setMaxListeners(0);
  }
  return e;
}

/**
 * The first attempt of a delivery, waiting up to `timeoutMs` for it. Wakes on this process's
 * attempts, and looks again every 250 ms for those made by a worker process.
 */
export async function firstAttempt(store: Store, deliveryId: string, timeoutMs: number): Promise<WebhookLogRecord | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const entry = await store.webhookLog.firstForDelivery(deliveryId);
    if (entry) return entry;
    const left = deadline - Date.now();
    if (left <= 0) return undefined;
    await once(attemptEvents(store.db), deliveryId, { signal: AbortSignal.timeout(Math.min(250, left)) }).catch(() => undefined);
  }
}

/**
 * The webhook delivery job: one attempt of one delivery. Builds and signs the body, POSTs it,
 * logs the attempt, and either settles the delivery (enqueueing the next of its lane) or asks
 * the queue to try again later.
 */
export class WebhookDeliverer {
  private readonly sender: WebhookSender;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly settings: DeliverySettings,
    /** In [0, 1): the retry jitter; tests fix it. */
    private readonly random: () => number = Math.random,
    /** Counts each run's outcome (GET /metrics). */
    private readonly metrics?: Pick<Metrics, "webhookDelivery">,
  ) {
    this.sender = new WebhookSender({ timeoutMs: settings.timeoutMs, policy: settings.policy });
  }

  /** Closed (shutdown): in-flight sends are cut and nothing waits for a full disk any more. */
  private closed = false;

  close(): void {
    this.closed = true;
    this.sender.close();
  }

  readonly handle = async (job: Job<DeliveryJob>): Promise<void> => {
    const { store } = this;
    const delivery = await store.webhookDeliveries.get(job.data.deliveryId);
    // Settled by an earlier run of this job (a repeat after a crash): nothing to send.
    if (!delivery || delivery.status !== "pending") return;
    const event = await store.events.get(delivery.eventId);
    if (!event) throw new Error(`delivery ${delivery.id}: event ${delivery.eventId} is missing`);
    const webhook = await store.webhooks.get(delivery.webhookId);
    if (!webhook) {
      await store.transaction((tx) => this.settleIn(tx, delivery, "cancelled", event.userId));
      this.metrics?.webhookDelivery("cancelled");
      return;
    }

    const timestamp = Date.now();
    const body = JSON.stringify(buildDeliveryBody(storedEvent(event), webhook.id, timestamp));
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "onair" };
    if (webhook.sharedSecret) {
      headers["Livepeer-Signature"] = signatureHeader(body, webhook.sharedSecret, timestamp);
      // For receivers built on the Standard Webhooks libraries: the same secret, their format.
      Object.assign(headers, standardWebhooksHeaders(event.id, body, webhook.sharedSecret, timestamp));
    }

    const result = await this.sender.post(webhook.url, body, headers);
    const verdict = judgeAttempt(result);
    const retryIn =
      verdict === "retry" ? nextRetryDelay(this.settings.schedule, job.attempt, delivery.windowStart, Date.now(), this.random()) : null;
    const settledAs = verdict === "delivered" ? "delivered" : retryIn === null ? "failed" : undefined;

    // The receiver has answered: its answer is written even if the disk is full for a moment,
    // or the job would come due again and deliver a second time.
    await writeWhenStorageAllows(
      () =>
        store.transaction(async (tx) => {
          await tx.webhookLog.add({
            webhookId: webhook.id,
            deliveryId: delivery.id,
            eventId: event.id,
            event: event.name,
            attempt: job.attempt,
            createdAt: timestamp,
            durationMs: result.durationMs,
            success: verdict === "delivered",
            url: webhook.url,
            requestHeaders: headers,
            requestBody: body,
            statusCode: result.statusCode ?? null,
            statusText: result.statusText ?? null,
            responseBody: result.responseBody ?? null,
            error: result.error ?? (verdict === "delivered" ? null : describeStatus(result)),
          });
          if (settledAs) await this.settleIn(tx, delivery, settledAs, webhook.userId);
        }),
      { giveUp: () => this.closed },
    );
    attemptEvents(store.db).emit(delivery.id);
    this.metrics?.webhookDelivery(settledAs === "delivered" ? "delivered" : settledAs === "failed" ? "failed" : "retry");

    // The operator's log says which address a refusal was about; the user's log does not.
    const logFields = { webhookId: webhook.id, eventId: event.id, event: event.name, attempt: job.attempt, status: result.statusCode, error: result.error, refused: result.refusedDetail };
    if (settledAs === "failed") this.log.warn(logFields, "webhook delivery failed for good");
    else if (settledAs === undefined) this.log.info({ ...logFields, retryInMs: retryIn }, "webhook delivery attempt failed; will retry");
    else this.log.debug(logFields, "webhook delivered");

    // Still pending: the queue runs this job again then, as attempt n+1 of the same delivery.
    if (settledAs === undefined) throw new RetryLater(retryIn!, describeStatus(result));
  };

  /** Settles the delivery and lets the next one of its lane go, in the transaction `tx`. */
  private async settleIn(tx: Tx, delivery: DeliveryRecord, status: "delivered" | "failed" | "cancelled", owner: string): Promise<void> {
    const { next } = await tx.webhookDeliveries.settle(delivery.id, status, Date.now());
    if (next) await enqueueDelivery(tx.db, next.id, owner);
  }
}

function describeStatus(r: SendResult): string {
  if (r.error) return r.error;
  const status = `${r.statusCode ?? "no status"}${r.statusText ? " " + r.statusText : ""}`;
  return r.statusCode !== undefined && r.statusCode >= 300 && r.statusCode < 400 ? `${status}: redirects are not followed` : status;
}
