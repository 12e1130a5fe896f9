import crypto from "node:crypto";
import { Redis } from "ioredis";

/** CI and developers run a local Redis; these tests are never skipped without one: they fail. */
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** A key prefix of our own per test file run, so parallel runs and leftovers never meet. */
export function uniquePrefix(label: string): string {
  return `onair-test-${label}-${process.pid}-${crypto.randomBytes(4).toString("hex")}`;
}

/** Deletes every key under `prefix`: what the tests leave in Redis is nothing. */
export async function deleteKeys(prefix: string): Promise<number> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    let cursor = "0";
    let deleted = 0;
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      if (keys.length) deleted += await redis.del(...keys);
    } while (cursor !== "0");
    return deleted;
  } finally {
    redis.disconnect();
  }
}

export async function countKeys(prefix: string): Promise<number> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    return (await redis.keys(`${prefix}:*`)).length;
  } finally {
    redis.disconnect();
  }
}
