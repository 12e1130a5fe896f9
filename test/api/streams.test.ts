import { useTestServer } from "../helpers/server";

const P720 = { name: "720p", bitrate: 3_000_000, fps: 30, width: 1280, height: 720 };
const P360 = { name: "360p", bitrate: 800_000, fps: 30, width: 640, height: 360 };

const fx = useTestServer();
const { api, bob } = fx;

describe("POST /stream", () => {
  it("creates a stream with the service-assigned fields (201)", async () => {
    const before = Date.now();
    const res = await api("POST", "/stream", { name: "studio", profiles: [P720, P360] });
    expect(res.status).toBe(201);
    const s = res.body;
    expect(s).toMatchObject({
      kind: "stream",
      name: "studio",
      isActive: false,
      record: false,
      suspended: false,
      profiles: [P720, P360],
      multistream: { targets: [] },
      sourceSegments: 0,
      transcodedSegments: 0,
      sourceSegmentsDuration: 0,
      transcodedSegmentsDuration: 0,
      lastSeen: 0,
    });
    expect(s.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(s.streamKey).toMatch(/^[0-9a-z]{4}(-[0-9a-z]{4}){3}$/);
    expect(s.playbackId).toMatch(/^[0-9a-z]{16}$/);
    expect(s.createdAt).toBeGreaterThanOrEqual(before);
    expect(s.createdAt).toBeLessThanOrEqual(Date.now());
    expect(s).not.toHaveProperty("parentId");
  });

  it("accepts record and multistream on create", async () => {
    const target = await api("POST", "/multistream/target", { url: "rtmp://a.example.com/live/k" });
    const res = await api("POST", "/stream", { name: "rec", record: true, profiles: [P360], multistream: { targets: [{ id: target.body.id, profile: "360p" }, { spec: { url: "srt://b.example.com:9000" }, profile: "source", videoOnly: true }] } });
    expect(res.status).toBe(201);
    expect(res.body.record).toBe(true);
    const targets = res.body.multistream.targets;
    expect(targets).toHaveLength(2);
    expect(targets[0]).toEqual({ id: target.body.id, profile: "360p", videoOnly: false });
    expect(targets[1]).toMatchObject({ profile: "source", videoOnly: true });
    const created = await api("GET", `/multistream/target/${targets[1].id}`);
    expect(created.body).toMatchObject({ name: "b.example.com" });
  });

  it.each([
    ["no name", {}, /name: is required/],
    ["empty name", { name: "  " }, /name: must not be empty/],
    ["name not a string", { name: 5 }, /name: must be a string/],
    ["negative bitrate", { name: "x", profiles: [{ ...P720, bitrate: -5 }] }, /profiles\[0\]\.bitrate: must be positive/],
    ["fractional fps", { name: "x", profiles: [{ ...P720, fps: 29.97 }] }, /profiles\[0\]\.fps: must be an integer/],
    ["zero width", { name: "x", profiles: [{ ...P720, width: 0 }] }, /profiles\[0\]\.width: must be positive/],
    ["string height", { name: "x", profiles: [{ ...P720, height: "720" }] }, /profiles\[0\]\.height: must be a number/],
    ["missing bitrate", { name: "x", profiles: [{ name: "a", fps: 30, width: 2, height: 2 }] }, /profiles\[0\]\.bitrate: is required/],
    ["duplicate profile names", { name: "x", profiles: [P720, { ...P360, name: "720p" }] }, /profiles\[1\]\.name: duplicate profile name "720p"/],
    ["record not boolean", { name: "x", record: "yes" }, /record: must be a boolean/],
    ["unknown multistream profile", { name: "x", profiles: [P360], multistream: { targets: [{ spec: { url: "rtmp://h/a" }, profile: "1080p" }] } }, /"1080p" is not a profile of this stream; use one of "source", "360p"/],
    ["target url with a bad scheme", { name: "x", multistream: { targets: [{ spec: { url: "http://h/a" }, profile: "source" } ] } }, /must start with rtmp:\/\/, rtmps:\/\/ or srt:\/\//],
    ["target with neither id nor spec", { name: "x", multistream: { targets: [{ profile: "source" }] } }, /exactly one of id or spec/],
    ["body is an array", [], /expected object/],
  ])("refuses %s with 422", async (_name, body, message) => {
    const before = (await api("GET", "/stream?limit=1000")).body.length;
    const res = await api("POST", "/stream", body);
    expect(res.status).toBe(422);
    expect(res.body.errors.join("\n")).toMatch(message);
    // Nothing is created by a refused request, not even inline targets.
    expect((await api("GET", "/stream?limit=1000")).body.length).toBe(before);
  });

  it("refuses another user's target as not found", async () => {
    const bobs = await bob("POST", "/multistream/target", { url: "rtmp://bob.example.com/live/k" });
    const res = await api("POST", "/stream", { name: "x", multistream: { targets: [{ id: bobs.body.id, profile: "source" }] } });
    expect(res.status).toBe(404);
    expect(res.body.errors[0]).toMatch(/multistream target .* not found/);
  });

  it("keeps a playback policy: jwt and webhook (one of the caller's webhooks) stored and shown, back to public by PATCH", async () => {
    const jwt = await api("POST", "/stream", { name: "x", playbackPolicy: { type: "jwt" } });
    expect(jwt.status).toBe(201);
    expect(jwt.body.playbackPolicy).toEqual({ type: "jwt" });
    expect((await api("PATCH", `/stream/${jwt.body.id}`, { playbackPolicy: { type: "public" } })).status).toBe(204);
    expect((await api("GET", `/stream/${jwt.body.id}`)).body.playbackPolicy).toEqual({ type: "public" });

    const hook = (await api("POST", "/webhook", { name: "h", url: "http://127.0.0.1:9/h", events: ["stream.started"] })).body;
    const guarded = await api("POST", "/stream", { name: "y", playbackPolicy: { type: "webhook", webhookId: hook.id, webhookContext: { a: 1 }, refreshInterval: 99_999 } });
    expect(guarded.status).toBe(201);
    expect(guarded.body.playbackPolicy).toEqual({ type: "webhook", webhookId: hook.id, webhookContext: { a: 1 }, refreshInterval: 3600 });
    for (const policy of [{ type: "webhook" }, { type: "webhook", webhookId: "nope" }]) {
      const res = await api("POST", "/stream", { name: "z", playbackPolicy: policy });
      expect(res.status).toBe(422);
      expect(res.body.errors[0]).toMatch(/^playbackPolicy\.webhookId: /);
    }
    // Another user's webhook is as unknown as a missing one.
    expect((await bob("POST", "/stream", { name: "z", playbackPolicy: { type: "webhook", webhookId: hook.id } })).status).toBe(422);
    expect((await api("POST", "/stream", { name: "z", playbackPolicy: { type: "drm" } })).status).toBe(422);
  });
});

describe("GET, PATCH, DELETE /stream/{id}", () => {
  it("gets the caller's stream; another user gets 404", async () => {
    const s = (await api("POST", "/stream", { name: "mine" })).body;
    const got = await api("GET", `/stream/${s.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(s);
    const other = await bob("GET", `/stream/${s.id}`);
    expect(other.status).toBe(404);
    expect(other.body).toEqual({ errors: [`stream ${s.id} not found`] });
    expect((await api("GET", "/stream/does-not-exist")).status).toBe(404);
  });

  it("PATCH updates name, record, suspended, profiles and multistream (204); absent fields stay", async () => {
    const s = (await api("POST", "/stream", { name: "before", profiles: [P720] })).body;
    const res = await api("PATCH", `/stream/${s.id}`, { name: "after", record: true, suspended: true });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    let got = (await api("GET", `/stream/${s.id}`)).body;
    expect(got).toMatchObject({ name: "after", record: true, suspended: true, profiles: [P720], streamKey: s.streamKey });

    expect((await api("PATCH", `/stream/${s.id}`, { suspended: false, profiles: [P360], multistream: { targets: [{ spec: { url: "rtmps://x.example.com/app/key" }, profile: "360p" }] } })).status).toBe(204);
    got = (await api("GET", `/stream/${s.id}`)).body;
    expect(got).toMatchObject({ suspended: false, record: true, profiles: [P360] });
    expect(got.multistream.targets).toHaveLength(1);

    // Profiles that would leave a reference dangling are refused, and nothing changes.
    const refused = await api("PATCH", `/stream/${s.id}`, { profiles: [P720] });
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0]).toMatch(/"360p" is not a profile of this stream/);
    expect((await api("GET", `/stream/${s.id}`)).body.profiles).toEqual([P360]);

    expect((await api("PATCH", `/stream/${s.id}`, { multistream: { targets: [] }, profiles: null })).status).toBe(204);
    got = (await api("GET", `/stream/${s.id}`)).body;
    expect(got).toMatchObject({ profiles: [], multistream: { targets: [] } });
  });

  it("PATCH refuses bad bodies and other users", async () => {
    const s = (await api("POST", "/stream", { name: "p" })).body;
    expect((await api("PATCH", `/stream/${s.id}`, { suspended: "true" })).status).toBe(422);
    expect((await api("PATCH", `/stream/${s.id}`, { profiles: [{ ...P360, bitrate: 0 }] })).status).toBe(422);
    expect((await bob("PATCH", `/stream/${s.id}`, { name: "stolen" })).status).toBe(404);
    expect((await api("GET", `/stream/${s.id}`)).body.name).toBe("p");
  });

  it("PATCH /stream/{id}/record sets record (204), refuses a child stream object (400), validates", async () => {
    const s = (await api("POST", "/stream", { name: "r" })).body;
    expect((await api("PATCH", `/stream/${s.id}/record`, { record: true })).status).toBe(204);
    expect((await api("GET", `/stream/${s.id}`)).body.record).toBe(true);
    expect((await api("PATCH", `/stream/${s.id}/record`, { record: false })).status).toBe(204);
    expect((await api("GET", `/stream/${s.id}`)).body.record).toBe(false);

    const missing = await api("PATCH", `/stream/${s.id}/record`, {});
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual(["record: is required"]);
    expect((await bob("PATCH", `/stream/${s.id}/record`, { record: true })).status).toBe(404);

    const session = await fx.t.server.store.sessions.start((await fx.t.server.store.streams.get(s.id))!);
    const child = await api("PATCH", `/stream/${session.id}/record`, { record: true });
    expect(child.status).toBe(400);
    expect(child.body).toEqual({ errors: ["can't set for session"] });
    expect((await api("PATCH", `/stream/${session.id}`, { name: "x" })).status).toBe(400);
  });

  it("DELETE (204) makes the stream 404 everywhere", async () => {
    const s = (await api("POST", "/stream", { name: "doomed" })).body;
    expect((await bob("DELETE", `/stream/${s.id}`)).status).toBe(404);
    const res = await api("DELETE", `/stream/${s.id}`);
    expect(res.status).toBe(204);
    expect((await api("GET", `/stream/${s.id}`)).status).toBe(404);
    expect((await api("PATCH", `/stream/${s.id}`, { name: "x" })).status).toBe(404);
    expect((await api("PATCH", `/stream/${s.id}/record`, { record: true })).status).toBe(404);
    expect((await api("DELETE", `/stream/${s.id}`)).status).toBe(404);
    expect((await api("GET", `/stream/${s.id}/sessions`)).status).toBe(404);
    expect((await api("GET", `/playback/${s.playbackId}`)).status).toBe(404);
    const all = (await api("GET", "/stream?limit=1000")).body as { id: string }[];
    expect(all.map((x) => x.id)).not.toContain(s.id);
  });
});

describe("GET /stream", () => {
  // A server of its own: lists start empty.
  const fresh = useTestServer();
  const { api: a } = fresh;

  it("lists the caller's streams with children unless streamsonly=1, and filters", async () => {
    const rec = (await a("POST", "/stream", { name: "Recorded Cam", record: true })).body;
    const plain = (await a("POST", "/stream", { name: "plain" })).body;
    const susp = (await a("POST", "/stream", { name: "suspended one" })).body;
    await a("PATCH", `/stream/${susp.id}`, { suspended: true });
    const session = await fresh.t.server.store.sessions.start((await fresh.t.server.store.streams.get(rec.id))!);
    await fresh.t.server.store.db.run("UPDATE streams SET is_active = 1 WHERE id = ?", [plain.id]);

    const ids = async (q: string) => ((await a("GET", `/stream${q}`)).body as { id: string }[]).map((s) => s.id);
    expect(await ids("")).toEqual([session.id, susp.id, plain.id, rec.id]);
    expect(await ids("?streamsonly=1")).toEqual([susp.id, plain.id, rec.id]);
    const f = (filters: unknown) => `?streamsonly=1&filters=${encodeURIComponent(JSON.stringify(filters))}`;
    expect(await ids(f([{ id: "record", value: true }]))).toEqual([rec.id]);
    expect(await ids(f([{ id: "isActive", value: true }]))).toEqual([plain.id]);
    expect(await ids(f([{ id: "isActive", value: false }]))).toEqual([susp.id, rec.id]);
    expect(await ids(f([{ id: "suspended", value: true }]))).toEqual([susp.id]);
    expect(await ids(f([{ id: "name", value: "cam" }]))).toEqual([rec.id]);
    expect(await ids(f([{ id: "record", value: false }, { id: "suspended", value: false }]))).toEqual([plain.id]);

    const child = (await a("GET", "/stream")).body[0];
    expect(child).toMatchObject({ id: session.id, parentId: rec.id, record: true });
    expect(child).not.toHaveProperty("streamKey");

    const bad = await a("GET", `/stream?filters=${encodeURIComponent("[{")}`);
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0]).toMatch(/filters/);
    expect((await a("GET", "/stream?streamsonly=maybe")).status).toBe(422);
    expect((await a("GET", "/stream?limit=0")).status).toBe(422);
    expect((await a("GET", "/stream?limit=1001")).status).toBe(422);
    expect((await a("GET", "/stream?cursor=nonsense")).status).toBe(422);
  });

  it("never shows another user's streams", async () => {
    const b = fresh.bob;
    expect((await b("GET", "/stream")).body).toEqual([]);
    await b("POST", "/stream", { name: "bob's" });
    const names = ((await a("GET", "/stream?limit=1000")).body as { name: string }[]).map((s) => s.name);
    expect(names).not.toContain("bob's");
  });
});
