import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "../log";
import { ApiRateLimiter, idleAfterMs, type RateSettings } from "./rateLimit";

/** What the API asks of a rate limiter: undefined to go ahead, else the seconds to wait. */
export interface RateLimiter {
  take(apiKey: string): Promise<number | undefined> | number | undefined;
}

/**
 * The token bucket of src/api/rateLimit.ts, kept in Redis so that every API node counts the same
 * bucket per key (with N nodes behind a load balancer a key would otherwise get N times its
 * rate). One script does the refill and the take atomically, on Redis's clock (nodes' clocks
 * may differ). Returns the tokens left scaled by 1000 (Lua numbers round-trip as integers),
 * and 0 or the milliseconds until a token is there.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if tokens == nil then tokens = burst; at = now end
local elapsed = now - at
if elapsed < 0 then elapsed = 0 end
tokens = math.min(burst, tokens + elapsed * rate / 1000)
if now > at then at = now end
local wait = 0
if tokens >= 1 - 1e-9 then
  tokens = tokens - 1
  if tokens < 0 then tokens = 0 end
else
  wait = math.ceil((1 - tokens) / rate * 1000)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return wait
`;

/**
 * With REDIS_URL: the shared bucket. While Redis does not answer (within `timeoutMs`), this
 * node's own in-memory bucket decides instead, so an outage of Redis never fails or stalls
 * the API; it says so once per outage.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly local: ApiRateLimiter;
  private down = false;

  constructor(
    private readonly redis: Redis,
    private readonly settings: RateSettings,
    private readonly prefix: string,
    private readonly log: Logger,
  ) {
    this.local = new ApiRateLimiter(settings);
  }

  async take(apiKey: string): Promise<number | undefined> {
    if (this.settings.perSecond <= 0) return undefined;
    const key = `${this.prefix}:ratelimit:${createHash("sha256").update(apiKey).digest("base64url")}`;
    try {
      const waitMs = Number(await this.redis.eval(TAKE, 1, key, this.settings.perSecond, this.settings.burst, idleAfterMs(this.settings) + 1000));
      if (this.down) this.log.info("API rate limit: Redis answers again; the limit is shared by every node");
      this.down = false;
      return waitMs > 0 ? Math.max(1, Math.ceil(waitMs / 1000)) : undefined;
    } catch (err) {
      if (!this.down) this.log.warn({ err }, "API rate limit: Redis does not answer; each node counts on its own meanwhile");
      this.down = true;
      return this.local.take(apiKey);
    }
  }
}
