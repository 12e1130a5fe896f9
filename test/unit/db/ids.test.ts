import { hashApiKey, newApiKey, newPlaybackId, newStreamKey, orderedNow, randomChars } from "../../../src/db/ids";

describe("ids", () => {
  it("stream keys are four dash-separated groups of base36", () => {
    const keys = new Set(Array.from({ length: 500 }, newStreamKey));
    expect(keys.size).toBe(500);
    for (const k of keys) expect(k).toMatch(/^[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$/);
  });

  it("playback ids are 16 URL-safe characters", () => {
    expect(newPlaybackId()).toMatch(/^[0-9a-z]{16}$/);
  });

  it("API keys are 32 base62 characters and hash to SHA-256 hex", () => {
    const key = newApiKey();
    expect(key).toMatch(/^[0-9A-Za-z]{32}$/);
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).not.toBe(hashApiKey(newApiKey()));
  });

  it("draws every character of the alphabet", () => {
    const seen = new Set(randomChars("abc", 300));
    expect([...seen].sort()).toEqual(["a", "b", "c"]);
  });
});

describe("orderedNow", () => {
  it("never repeats or goes back, and stays on the wall clock", () => {
    const before = Date.now();
    const stamps = Array.from({ length: 5000 }, () => orderedNow());
    expect(stamps.every((s, i) => i === 0 || s > stamps[i - 1]!)).toBe(true);
    expect(stamps[0]!).toBeGreaterThanOrEqual(before);
    // 5000 calls run ahead of the clock by at most their count.
    expect(stamps[stamps.length - 1]!).toBeLessThanOrEqual(Date.now() + 5000);
  });
});
