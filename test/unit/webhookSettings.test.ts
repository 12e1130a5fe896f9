import { ConfigError, loadConfig } from "../../src/config";

describe("webhook and queue settings", () => {
  it("defaults: spec 8's schedule, 10 s attempts, private receivers allowed, the 'onair' Redis prefix", () => {
    const c = loadConfig({});
    expect(c.webhooks).toEqual({ blockPrivate: false, retryFirstMs: 5_000, retryWindowMs: 900_000, timeoutMs: 10_000, concurrency: 16 });
    expect(c.redisPrefix).toBe("onair");
  });

  it("reads every setting", () => {
    const c = loadConfig({
      WEBHOOK_BLOCK_PRIVATE: "true",
      WEBHOOK_RETRY_FIRST_MS: "50",
      WEBHOOK_RETRY_WINDOW_MS: "2000",
      WEBHOOK_TIMEOUT_MS: "300",
      WEBHOOK_CONCURRENCY: "0",
      REDIS_URL: "redis://127.0.0.1:6379",
      REDIS_PREFIX: "onair-ci:1",
    });
    expect(c.webhooks).toEqual({ blockPrivate: true, retryFirstMs: 50, retryWindowMs: 2_000, timeoutMs: 300, concurrency: 0 });
    expect(c.redisPrefix).toBe("onair-ci:1");
  });

  it.each([
    ["1", true],
    ["yes", true],
    ["0", false],
    ["FALSE", false],
  ])("WEBHOOK_BLOCK_PRIVATE=%s is %s", (v, expected) => {
    expect(loadConfig({ WEBHOOK_BLOCK_PRIVATE: v }).webhooks.blockPrivate).toBe(expected);
  });

  it.each([
    [{ WEBHOOK_BLOCK_PRIVATE: "maybe" }, /WEBHOOK_BLOCK_PRIVATE must be true or false/],
    [{ WEBHOOK_RETRY_FIRST_MS: "0" }, /WEBHOOK_RETRY_FIRST_MS must be an integer from 1/],
    [{ WEBHOOK_RETRY_WINDOW_MS: "soon" }, /WEBHOOK_RETRY_WINDOW_MS must be an integer/],
    [{ WEBHOOK_TIMEOUT_MS: "60000" }, /WEBHOOK_TIMEOUT_MS must be an integer from 1 to 30000/],
    [{ WEBHOOK_CONCURRENCY: "-1" }, /WEBHOOK_CONCURRENCY must be an integer from 0/],
    [{ REDIS_PREFIX: "has space" }, /REDIS_PREFIX must be/],
    [{ WEBHOOK_CONCURRENCY: "0" }, /WEBHOOK_CONCURRENCY=0 needs REDIS_URL/],
  ])("refuses %j with a clear message", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
