import { loadConfig } from "../../src/config";
import { apiClient, startTestServer, type TestServer } from "../helpers/server";

// Issue 8, abuse limits: the per-key API rate limit and the per-stream caps, against a real
// server configured through the environment as an operator would.

const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe("per-key API rate limit", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ API_RATE_LIMIT: "1", API_RATE_BURST: "3" });
  });
  afterAll(() => t.stop());

  it("answers 429 with Retry-After past the burst; other keys go on; the key recovers after the wait", async () => {
    const api = apiClient(t.apiUrl, await t.keyFor("alice"));
    const other = apiClient(t.apiUrl, await t.keyFor("bob"));

    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await api("GET", "/stream")).status);
    const refused = await api("GET", "/stream");
    statuses.push(refused.status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(refused.body.errors).toHaveLength(1);
    expect(refused.body.errors[0]).toMatch(/^rate limit exceeded: .*retry after \d+ s$/);
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(refused.body.errors[0]).toContain(`retry after ${retryAfter} s`);
    // Every route counts, writes too, and a refused write changes nothing.
    expect((await api("POST", "/stream", { name: "refused" })).status).toBe(429);

    // Another user's key has its own bucket.
    for (let i = 0; i < 3; i++) expect((await other("GET", "/stream")).status).toBe(200);

    // Refused requests take no token: waiting Retry-After is enough, however often one retried.
    const waitedFrom = Date.now();
    await until("the key to recover", async () => (await api("GET", "/stream")).status === 200, retryAfter * 1000 + 2000);
    expect(Date.now() - waitedFrom).toBeLessThanOrEqual(retryAfter * 1000 + 500);
    // The recovery spent the token it earned; a second key of the same user looks at the result.
    expect((await api("GET", "/stream")).status).toBe(429);
    const listed = (await apiClient(t.apiUrl, await t.keyFor("alice"))("GET", "/stream")).body as { name: string }[];
    expect(listed.map((s) => s.name)).not.toContain("refused");
  });

  it("counts per key, not per user, and never counts unauthenticated requests", async () => {
    const first = apiClient(t.apiUrl, await t.keyFor("carol"));
    const second = apiClient(t.apiUrl, await t.keyFor("carol"));
    for (let i = 0; i < 3; i++) expect((await first("GET", "/stream")).status).toBe(200);
    expect((await first("GET", "/stream")).status).toBe(429);
    expect((await second("GET", "/stream")).status).toBe(200);

    // Many 401s with unknown keys: 401 each time, never 429, and no bucket spent.
    for (let i = 0; i < 10; i++) expect((await apiClient(t.apiUrl, "not-a-key")("GET", "/stream")).status).toBe(401);
    const fresh = apiClient(t.apiUrl, await t.keyFor("dave"));
    const noAuth = await fetch(`${t.apiUrl}/stream`);
    expect(noAuth.status).toBe(401);
    for (let i = 0; i < 3; i++) expect((await fresh("GET", "/stream")).status).toBe(200);
  });

  it("leaves unauthenticated routes (the OpenAPI document) alone", async () => {
    for (let i = 0; i < 10; i++) expect((await fetch(`${t.apiUrl}/openapi.json`)).status).toBe(200);
  });
});

describe("API_RATE_LIMIT=0 turns the limit off", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ API_RATE_LIMIT: "0", API_RATE_BURST: "1" });
  });
  afterAll(() => t.stop());

  it("serves a burst well past API_RATE_BURST", async () => {
    const api = apiClient(t.apiUrl, t.key);
    const statuses = await Promise.all(Array.from({ length: 30 }, () => api("GET", "/stream").then((r) => r.status)));
    expect(new Set(statuses)).toEqual(new Set([200]));
  });
});

describe("profile and target caps", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ MAX_PROFILES_PER_STREAM: "2", MAX_TARGETS_PER_STREAM: "1" });
  });
  afterAll(() => t.stop());

  const profile = (name: string) => ({ name, bitrate: 300_000, fps: 30, width: 320, height: 180 });
  const target = (n: number) => ({ profile: "source", spec: { name: `t${n}`, url: `rtmp://example.com/live/k${n}` } });

  it("POST /stream: 422 naming the setting; at the cap is fine", async () => {
    const api = apiClient(t.apiUrl, t.key);
    const tooMany = await api("POST", "/stream", { name: "ladder", profiles: [profile("a"), profile("b"), profile("c")] });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.errors).toEqual(["profiles: at most 2 profiles per stream (MAX_PROFILES_PER_STREAM), got 3"]);

    const targets = await api("POST", "/stream", { name: "fan-out", multistream: { targets: [target(1), target(2)] } });
    expect(targets.status).toBe(422);
    expect(targets.body.errors).toEqual(["multistream.targets: at most 1 multistream targets per stream (MAX_TARGETS_PER_STREAM), got 2"]);

    // Nothing was created by the refusals (no stream, no target made on the fly).
    expect((await api("GET", "/stream")).body).toEqual([]);
    expect((await api("GET", "/multistream/target")).body).toEqual([]);

    const ok = await api("POST", "/stream", { name: "ok", profiles: [profile("a"), profile("b")], multistream: { targets: [target(1)] } });
    expect(ok.status).toBe(201);
    expect(ok.body.profiles).toHaveLength(2);
    expect(ok.body.multistream.targets).toHaveLength(1);
  });

  it("PATCH /stream/{id}: the same caps, and the stream is left as it was", async () => {
    const api = apiClient(t.apiUrl, t.key);
    const s = (await api("POST", "/stream", { name: "patch me", profiles: [profile("a")] })).body;
    const res = await api("PATCH", `/stream/${s.id}`, { profiles: [profile("a"), profile("b"), profile("c")], multistream: { targets: [target(3), target(4)] } });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([
      "profiles: at most 2 profiles per stream (MAX_PROFILES_PER_STREAM), got 3",
      "multistream.targets: at most 1 multistream targets per stream (MAX_TARGETS_PER_STREAM), got 2",
    ]);
    const after = (await api("GET", `/stream/${s.id}`)).body;
    expect(after.profiles.map((p: { name: string }) => p.name)).toEqual(["a"]);
    expect((await api("PATCH", `/stream/${s.id}`, { profiles: [profile("a"), profile("b")] })).status).toBe(204);
  });

  it("the OpenAPI document still builds", async () => {
    const res = await fetch(`${t.apiUrl}/openapi.json`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { paths: Record<string, unknown> }).paths["/stream"]).toBeDefined();
  });
});

describe("per-user caps on streams, webhooks and targets", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ MAX_STREAMS_PER_USER: "2", MAX_WEBHOOKS_PER_USER: "1", MAX_TARGETS_PER_USER: "2" });
  });
  afterAll(() => t.stop());

  it("the next one past a cap is a 400 naming the limit; deleting makes room; other users are not counted", async () => {
    const api = apiClient(t.apiUrl, await t.keyFor("carol"));
    const other = apiClient(t.apiUrl, await t.keyFor("dave"));
    const first = (await api("POST", "/stream", { name: "one" })).body;
    expect((await api("POST", "/stream", { name: "two" })).status).toBe(201);
    const refused = await api("POST", "/stream", { name: "three" });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual(["at most 2 streams per user (MAX_STREAMS_PER_USER); this user has 2: delete some first"]);
    expect((await other("POST", "/stream", { name: "dave's" })).status).toBe(201);
    expect((await api("DELETE", `/stream/${first.id}`)).status).toBe(204);
    expect((await api("POST", "/stream", { name: "three, after a delete" })).status).toBe(201);

    const hook = { name: "h", url: "http://127.0.0.1:9/hook" };
    expect((await api("POST", "/webhook", hook)).status).toBe(200);
    const hooks = await api("POST", "/webhook", hook);
    expect(hooks.status).toBe(400);
    expect(hooks.body.errors[0]).toContain("at most 1 webhooks per user (MAX_WEBHOOKS_PER_USER)");

    const target = { url: "rtmp://127.0.0.1/live/k" };
    expect((await api("POST", "/multistream/target", target)).status).toBe(201);
    // An inline spec creates a target too: two would go past the cap, so none is created.
    const [stream] = (await api("GET", "/stream")).body;
    const inline = await api("PATCH", `/stream/${stream.id}`, { multistream: { targets: [1, 2].map((i) => ({ profile: "source", spec: { name: `t${i}`, url: target.url } })) } });
    expect(inline.status).toBe(400);
    expect(inline.body.errors[0]).toContain("at most 2 multistream targets per user (MAX_TARGETS_PER_USER); this user has 1");
    expect((await api("GET", "/multistream/target")).body).toHaveLength(1);
    expect((await api("POST", "/multistream/target", target)).status).toBe(201);
    expect((await api("POST", "/multistream/target", target)).status).toBe(400);
  });
});

describe("the limit settings", () => {
  it("default to limits no normal client meets", () => {
    expect(loadConfig({}).limits).toEqual({
      apiRatePerSecond: 50,
      apiRateBurst: 100,
      maxProfilesPerStream: 5,
      maxTargetsPerStream: 10,
      maxLiveStreamsPerUser: 10,
      maxPullsPerNode: 50,
      blockingWaitsPerClient: 100,
      blockingWaitsPerNode: 5000,
      blockingWaitsPerPlayback: 2000,
      nodeWebhookQuestionRate: 100,
      nodeWebhookQuestionsInFlight: 48,
      publicMaxConnections: 20000,
      webhookQuestionRate: 20,
      webhookQuestionsInFlight: 16,
      maxRenditionWidth: 1920,
      maxRenditionHeight: 1080,
      maxRenditionFps: 60,
      maxStreamsPerUser: 1000,
      maxWebhooksPerUser: 20,
      maxTargetsPerUser: 100,
      maxSigningKeysPerUser: 100,
      maxAssetsPerUser: 1000,
      maxClipBytesPerUser: 10 * 1024 * 1024 * 1024,
    });
  });

  it.each([
    ["API_RATE_LIMIT", "-1", /API_RATE_LIMIT must be an integer from 0 to 100000/],
    ["API_RATE_LIMIT", "fast", /API_RATE_LIMIT must be an integer/],
    ["API_RATE_BURST", "0", /API_RATE_BURST must be an integer from 1/],
    ["MAX_PROFILES_PER_STREAM", "0", /MAX_PROFILES_PER_STREAM must be an integer from 1 to 100/],
    ["MAX_TARGETS_PER_STREAM", "101", /MAX_TARGETS_PER_STREAM must be an integer from 0 to 100/],
    ["MAX_LIVE_STREAMS_PER_USER", "0", /MAX_LIVE_STREAMS_PER_USER must be an integer from 1/],
  ])("%s=%s is refused with a clear message", (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });
});
