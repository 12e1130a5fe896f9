import { gatewayBasename, UrlIds } from "../../../../src/ingest/pull/gatewayUrls";

describe("gatewayBasename", () => {
  it.each([
    ["https://cdn.example/live/seg12.ts?token=x", "seg12.ts"],
    ["https://cdn.example/a/init%20one.mp4", "init_one.mp4"],
    ["https://cdn.example/", "media"],
    ["https://cdn.example/..ts", "ts"],
    ["httpproxy:127.0.0.3:80/a.ts", "a.ts"],
    ["not a url", "media"],
    [`https://cdn.example/${"a".repeat(200)}.m4s`, `${"a".repeat(76)}.m4s`],
  ])("%s → %s", (url, expected) => {
    expect(gatewayBasename(url)).toBe(expected);
  });
});

describe("UrlIds", () => {
  it("gives a url one id, named again or not, and each new one its own", () => {
    const ids = new UrlIds(10);
    const a = ids.idFor({ url: "https://x/a.ts" });
    expect(ids.idFor({ url: "https://x/a.ts" })).toBe(a);
    const b = ids.idFor({ url: "https://x/b.ts" });
    expect(b).not.toBe(a);
    expect(ids.target(a)).toEqual({ url: "https://x/a.ts" });
    expect(ids.target("zz")).toBeUndefined();
    expect(ids.target(ids.idFor({ refusedScheme: "file:" }))).toEqual({ refusedScheme: "file:" });
  });

  it("keeps at most `max`, forgetting the least recently named, and never reuses an id", () => {
    const ids = new UrlIds(3);
    const made = ["a", "b", "c"].map((n) => ids.idFor({ url: `https://x/${n}` }));
    ids.idFor({ url: "https://x/a" }); // a is the newest now
    const d = ids.idFor({ url: "https://x/d" });
    expect(ids.size).toBe(3);
    expect(ids.target(made[1]!)).toBeUndefined(); // b went
    expect(ids.target(made[0]!)).toEqual({ url: "https://x/a" });
    expect(new Set([...made, d]).size).toBe(4);
    // b named again: a new id, not its old one.
    expect(ids.idFor({ url: "https://x/b" })).not.toBe(made[1]);
    expect(ids.size).toBe(3);
  });

  it("stays bounded under a live playlist's endless new segments", () => {
    const ids = new UrlIds(100);
    for (let i = 0; i < 10_000; i++) ids.idFor({ url: `https://x/seg${i}.ts` });
    expect(ids.size).toBe(100);
  });
});
