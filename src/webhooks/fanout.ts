import { setImmediate as nextTurn } from "node:timers/promises";
import type { EventRecord, Sql, Store, WebhookRecord } from "../db";
import type { Logger } from "../log";
import { enqueueJob, RetryLater, type Job, type NewJob } from "../queue";
import { addDelivery } from "./deliver";

// An event is raised as one row and one fan-out job (src/events). The job turns it into one
// delivery per webhook registered for it, a bounded batch of the owner's webhooks per
// transaction with a turn of the event loop between batches: an event for 20,000 webhooks
// never holds the loop (RTMP, HLS, the API) or the database's write lock for long.

export const EVENT_FANOUT_QUEUE = "event-fanout";

/** Webhooks looked at per transaction, at most. */
export const FANOUT_BATCH = 500;
/**
 * A transaction stops taking webhooks after this long, however many are left in its batch:
 * bounds what one batch holds the event loop for on a slow or busy machine.
 */
export const FANOUT_BUDGET_MS = 4;
/** Webhooks read per query within a batch. */
const PAGE = 50;

export interface FanOutJob {
  eventId: string;
  userId: string;
}

/** Enqueues the fan-out of a just-recorded event; joins the caller's transaction. */
export async function enqueueFanOut(db: Sql, event: EventRecord): Promise<void> {
  await enqueueJob<FanOutJob>(db, EVENT_FANOUT_QUEUE, fanOutJob(event));
}

const fanOutJob = (event: EventRecord): NewJob<FanOutJob> => ({
  id: fanOutJobId(event.id),
  data: { eventId: event.id, userId: event.userId },
  owner: event.userId,
});

/** The fan-out jobs that must exist: one per event not fanned out yet (for `JobQueue.expect`). */
export async function expectedFanOutJobs(store: Store, limit: number): Promise<NewJob<FanOutJob>[]> {
  return (await store.events.fanOutsPending(limit)).map(fanOutJob);
}

export const fanOutJobId = (eventId: string) => `fanout-${eventId}`;

/**
 * Whether `webhook` is to receive `event`: registered for its name and its stream (or all
 * streams), and made before it was raised (a webhook made later does not get past events).
 */
export function wantsEvent(webhook: WebhookRecord, event: Pick<EventRecord, "name" | "streamId" | "createdAt">): boolean {
  return (
    webhook.events.includes(event.name) && (webhook.streamId === null || webhook.streamId === event.streamId) && webhook.createdAt <= event.createdAt
  );
}

/**
 * One batch of the owner's oldest unfinished fan-out, in one transaction: a delivery for each
 * webhook of the batch that wants the event, and the progress. Fan-outs of one owner run in the
 * order their events were raised, whichever job or process runs them, so each lane receives
 * its stream's events in order; a batch that two workers race for is done once (the progress
 * is read and written in the same write transaction).
 * Returns the event worked on and the deliveries added, or undefined when nothing is left to
 * do up to the event `upToSeq`.
 */
export async function fanOutBatch(
  store: Store,
  userId: string,
  upToSeq: number,
  limits: { batch: number; budgetMs: number } = { batch: FANOUT_BATCH, budgetMs: FANOUT_BUDGET_MS },
): Promise<{ event: EventRecord; added: number } | undefined> {
  return store.transaction(async (tx) => {
      const event = await tx.events.oldestToFanOut(userId);
      if (!event || event.seq > upToSeq || event.fanoutAfter === null) return undefined;
      const started = performance.now();
      let after = event.fanoutAfter;
      let looked = 0;
      let added = 0;
      let finished = false;
      // Pages small enough that a batch cut by the budget has read little it does not use.
      // At least one page, however slow: every batch makes progress.
      while (looked < limits.batch && !finished && (looked === 0 || performance.now() - started <= limits.budgetMs)) {
        const page = await tx.webhooks.pageForUser(userId, after, Math.min(PAGE, limits.batch - looked));
        if (page.length < Math.min(PAGE, limits.batch - looked)) finished = true;
        for (const w of page) {
          looked++;
          after = w.seq;
          if (wantsEvent(w, event)) {
            await addDelivery(tx, { webhookId: w.id, eventId: event.id, streamId: event.streamId, windowStart: event.createdAt, createdAt: Date.now() }, userId);
            added++;
          }
          if (performance.now() - started > limits.budgetMs) {
            // Cut short: the rest of this page (if any) is the next batch's.
            finished &&= w === page[page.length - 1];
            break;
          }
        }
      }
      await tx.events.setFanOutProgress(event.id, finished ? null : after);
      return { event, added };
    });
}

/**
 * The fan-out job: works through the owner's unfinished fan-outs up to and including its own.
 * When `stopping()` turns true (a shutdown) it stops between batches and hands the rest back to
 * the queue without using up an attempt: the progress is in the database.
 */
export function fanOutHandler(store: Store, log: Logger, stopping: () => boolean = () => false): (job: Job<FanOutJob>) => Promise<void> {
  return async (job) => {
    const own = await store.events.get(job.data.eventId);
    // Pruned, or finished by another job: nothing to do.
    if (!own || own.fanoutAfter === null) return;
    const started = Date.now();
    let deliveries = 0;
    let batches = 0;
    for (;;) {
      const done = await fanOutBatch(store, job.data.userId, own.seq);
      if (!done) break;
      deliveries += done.added;
      batches++;
      if (stopping()) throw new RetryLater(0, "shutting down: the fan-out goes on after the restart", { counted: false });
      // Between batches the loop serves everyone else.
      await nextTurn();
    }
    if (batches > 1) log.info({ eventId: own.id, event: own.name, deliveries, batches, ms: Date.now() - started }, "event fanned out to its webhooks");
  };
}
