import { area, matching, url } from "../declare";

export const queue = area("queue", {
  REDIS_URL: url({ protocols: ["redis:", "rediss:"], doc: "Use BullMQ on Redis instead of the embedded queue." }).at("redisUrl"),
  REDIS_PREFIX: matching({
    pattern: /^[A-Za-z0-9_.:-]{1,100}$/,
    what: "1-100 letters, digits or _ . : -",
    default: "onair",
    doc: "Prefix of every key onair's queues keep in Redis.",
  }).at("redisPrefix"),
});
