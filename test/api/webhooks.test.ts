import { useTestServer } from "../helpers/server";

const fx = useTestServer();
const { api, bob } = fx;

const ALL_EVENTS = [
  "stream.started",
  "stream.idle",
  "recording.ready",
  "recording.started",
  "recording.waiting",
  "multistream.connected",
  "multistream.error",
  "multistream.disconnected",
  "asset.ready",
  "asset.failed",
];

describe("webhooks", () => {
  it("create returns 200 with the whole webhook, sharedSecret included", async () => {
    const before = Date.now();
    const res = await api("POST", "/webhook", { name: "ops", url: "https://hooks.example.com/onair", events: ["stream.started", "stream.idle"], sharedSecret: "s3cret" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ kind: "webhook", name: "ops", url: "https://hooks.example.com/onair", events: ["stream.started", "stream.idle"], sharedSecret: "s3cret" });
    expect(res.body.id).toBeTruthy();
    expect(res.body.userId).toBeTruthy();
    expect(res.body.createdAt).toBeGreaterThanOrEqual(before);
  });

  it("defaults: name from the url's host, every event, no secret", async () => {
    const res = await api("POST", "/webhook", { url: "http://127.0.0.1:9999/hook" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: "127.0.0.1", events: ALL_EVENTS });
    expect(res.body).not.toHaveProperty("sharedSecret");
  });

  it.each([
    [{ name: "x" }, /url: is required/],
    [{ name: "x", url: "ftp://example.com" }, /url: must be an http:\/\/ or https:\/\/ URL/],
    [{ name: "x", url: "http://h/x", events: ["stream.exploded"] }, /events\[0\]: must be one of stream.started, stream.idle/],
    [{ name: "x", url: "http://h/x", events: "stream.started" }, /events/],
    [{ name: "x", url: "http://h/x", sharedSecret: 12 }, /sharedSecret: must be a string/],
  ])("refuses %j with 422", async (body, message) => {
    const res = await api("POST", "/webhook", body);
    expect(res.status).toBe(422);
    expect(res.body.errors.join("\n")).toMatch(message);
  });

  it("scopes to one of the caller's streams; another user's stream is 404", async () => {
    const s = (await api("POST", "/stream", { name: "cam" })).body;
    const ok = await api("POST", "/webhook", { name: "one", url: "http://h/x", events: ["stream.started"], streamId: s.id });
    expect(ok.body.streamId).toBe(s.id);
    expect((await bob("POST", "/webhook", { name: "spy", url: "http://h/x", streamId: s.id })).status).toBe(404);
  });

  it("get, list, PUT (200 with the webhook) and DELETE (200 with the webhook)", async () => {
    const w = (await api("POST", "/webhook", { name: "w", url: "http://h/1", events: ["stream.idle"], sharedSecret: "a" })).body;
    expect((await api("GET", `/webhook/${w.id}`)).body).toEqual(w);
    const list = (await api("GET", "/webhook")).body as { id: string }[];
    expect(list[0]).toEqual(w);

    const put = await api("PUT", `/webhook/${w.id}`, { name: "w2", url: "http://h/2", events: ["recording.ready"] });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ id: w.id, name: "w2", url: "http://h/2", events: ["recording.ready"], createdAt: w.createdAt });
    // PUT describes the webhook whole: the secret it did not repeat is gone.
    expect(put.body).not.toHaveProperty("sharedSecret");
    expect((await api("GET", `/webhook/${w.id}`)).body).toEqual(put.body);
    expect((await api("PUT", `/webhook/${w.id}`, { name: "w3" })).status).toBe(422);

    expect((await bob("GET", `/webhook/${w.id}`)).status).toBe(404);
    expect((await bob("PUT", `/webhook/${w.id}`, { name: "x", url: "http://evil/x" })).status).toBe(404);
    expect((await bob("DELETE", `/webhook/${w.id}`)).status).toBe(404);
    expect(((await bob("GET", "/webhook")).body as { id: string }[]).map((x) => x.id)).not.toContain(w.id);

    const del = await api("DELETE", `/webhook/${w.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual(put.body);
    expect((await api("GET", `/webhook/${w.id}`)).status).toBe(404);
    expect((await api("DELETE", `/webhook/${w.id}`)).status).toBe(404);
  });
});
