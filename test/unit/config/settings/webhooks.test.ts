import { ConfigError, loadConfig } from "../../../../src/config";

describe("webhook and queue settings", () => {
  it("defaults: docs/api.md#spec-8-limits schedule, 10 s attempts, private destinations refused, the 'onair' Redis prefix", () => {
    const c = loadConfig({});
    expect(c.webhooks).toEqual({ retryFirstMs: 5_000, retryWindowMs: 900_000, timeoutMs: 10_000, concurrency: 16 });
    expect(c.outbound).toEqual({ allowPrivate: false, allowHosts: [] });
    expect(c.redisPrefix).toBe("onair");
  });

  it("reads every setting", () => {
    const c = loadConfig({
      ALLOW_PRIVATE_DESTINATIONS: "true",
      DESTINATION_ALLOW_HOSTS: " hooks.LAN, 10.0.0.7,[::1] ,",
      WEBHOOK_RETRY_FIRST_MS: "50",
      WEBHOOK_RETRY_WINDOW_MS: "2000",
      WEBHOOK_TIMEOUT_MS: "300",
      WEBHOOK_CONCURRENCY: "0",
      REDIS_URL: "redis://127.0.0.1:6379",
      REDIS_PREFIX: "onair-ci:1",
    });
    expect(c.webhooks).toEqual({ retryFirstMs: 50, retryWindowMs: 2_000, timeoutMs: 300, concurrency: 0 });
    expect(c.outbound.allowPrivate).toBe(true);
    expect(c.outbound.allowHosts).toEqual(["hooks.lan", "10.0.0.7", expect.any(String)]);
    expect(c.redisPrefix).toBe("onair-ci:1");
  });

  it.each([
    ["1", true],
    ["yes", true],
    ["0", false],
    ["FALSE", false],
  ])("ALLOW_PRIVATE_DESTINATIONS=%s is %s", (v, expected) => {
    expect(loadConfig({ ALLOW_PRIVATE_DESTINATIONS: v }).outbound.allowPrivate).toBe(expected);
  });

  it("WEBHOOK_BLOCK_PRIVATE (replaced by the outbound policy): true asked for the default and is ignored; false stops the start, naming the new settings", () => {
    expect(loadConfig({ WEBHOOK_BLOCK_PRIVATE: "true" }).outbound).toEqual({ allowPrivate: false, allowHosts: [] });
    expect(() => loadConfig({ WEBHOOK_BLOCK_PRIVATE: "false" })).toThrow(/WEBHOOK_BLOCK_PRIVATE is no longer read: .*ALLOW_PRIVATE_DESTINATIONS=true.*DESTINATION_ALLOW_HOSTS/);
  });

  it("reports every bad DESTINATION_ALLOW_HOSTS entry with the other settings' problems, at once", () => {
    let error: ConfigError | undefined;
    try {
      loadConfig({ DESTINATION_ALLOW_HOSTS: "ok.example,10.0.0.0/8,http://x.example,bad host", WEBHOOK_TIMEOUT_MS: "0" });
    } catch (err) {
      error = err as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error!.problems).toHaveLength(2);
    expect(error!.problems.join("\n")).toContain('DESTINATION_ALLOW_HOSTS must list host names or IP addresses separated by commas (exact hosts: no ranges, ports or URLs), got "10.0.0.0/8", "http://x.example", "bad host"');
    expect(error!.problems.join("\n")).toContain("WEBHOOK_TIMEOUT_MS");
  });

  it.each([
    [{ ALLOW_PRIVATE_DESTINATIONS: "maybe" }, /ALLOW_PRIVATE_DESTINATIONS must be true or false/],
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
