import type { Sql } from "../db";
import { waitingJobsByQueue } from "./queueDepth";

export interface QueueDepthReader {
  depths(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

/**
 * Queue depth with REDIS_URL: BullMQ's counts of jobs not yet done (waiting, active, delayed,
 * prioritized), plus those still in the SQLite outbox on their way to Redis. Reads through a
 * connection of its own, opened at the first scrape; a Redis that does not answer fails the
 * scrape of this gauge only for the moment (it is left out), not the server.
 */
export function bullmqQueueDepth(db: Sql, redisUrl: string, prefix: string, queueNames: readonly string[]): QueueDepthReader {
  // Loaded only when Redis is configured, as the queue adapter itself is (about 170 ms).
  /* eslint-disable @typescript-eslint/no-require-imports */
  let opened: { close(): Promise<void>; counts(name: string): Promise<number> } | undefined;
  const open = () => {
    const { Queue } = require("bullmq") as typeof import("bullmq");
    const { Redis } = require("ioredis") as typeof import("ioredis");
    const connection = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    connection.on("error", () => undefined); // the queue adapter logs Redis trouble already
    const queues = new Map(queueNames.map((name) => [name, new Queue(name, { connection, prefix })]));
    return {
      async counts(name: string) {
        const c = await queues.get(name)!.getJobCounts("waiting", "active", "delayed", "prioritized", "waiting-children");
        return Object.values(c).reduce((a, b) => a + b, 0);
      },
      async close() {
        await Promise.all([...queues.values()].map((q) => q.close()));
        connection.disconnect();
      },
    };
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
  return {
    async depths() {
      opened ??= open();
      const depth = await waitingJobsByQueue(db, queueNames);
      await Promise.all(
        queueNames.map(async (name) => {
          depth[name] = (depth[name] ?? 0) + (await opened!.counts(name));
        }),
      );
      return depth;
    },
    async close() {
      await opened?.close();
    },
  };
}
