import type { Sql } from "../db";
import type { Logger } from "../log";
import type { BullQueueSettings } from "./bullmq";
import { EmbeddedQueue } from "./embedded";
import type { JobQueue, QueueTuning } from "./types";

export * from "./types";
export { enqueueJob } from "./jobTable";
export { redactUrl } from "./redisUrl";
export type { BullQueueSettings } from "./bullmq";

export type QueueSettings = { kind: "embedded" } | ({ kind: "bullmq" } & BullQueueSettings);

/** The embedded queue, or BullMQ when a Redis URL is configured (docs/architecture.md#the-queue). */
export async function openQueue(db: Sql, log: Logger, settings: QueueSettings, tuning: Partial<QueueTuning> = {}): Promise<JobQueue> {
  if (settings.kind === "bullmq") {
    // BullMQ and ioredis take about 170 ms to load: only processes that use Redis pay for it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { BullQueue } = require("./bullmq") as typeof import("./bullmq");
    return BullQueue.open(db, log, settings, tuning);
  }
  return new EmbeddedQueue(db, log, tuning);
}
