import { Livepeer } from "livepeer";
import { createEventSink } from "../../src/events";
import { createLogger } from "../../src/log";
import { apiClient, startTestServer, type Api, type TestServer } from "../helpers/server";
import { FAST_RETRIES, until } from "./fixture";
import { startReceiver, type Answer, type Receiver } from "../helpers/receiver";

// GET /webhook/{id}/log, GET /webhook/{id}/log/{logId}, POST …/resend, and the webhook's status,
// against a real server, with the plain API and with the official SDK.

let t: TestServer;
let api: Api;
let bob: Api;
let rx: Receiver;
/** What the receiver answers; tests change it. */
let answer: (req: { body: any }) => Answer = () => 200;

beforeAll(async () => {
  rx = await startReceiver((req) => answer(req));
  t = await startTestServer({ ...FAST_RETRIES });
  api = apiClient(t.apiUrl, t.key);
  bob = apiClient(t.apiUrl, await t.keyFor("bob"));
});
afterEach(async () => {
  answer = () => 200;
});
afterAll(async () => {
  await t.stop();
  await rx.close();
});

/** A webhook with `n` delivered events of a stream of its own, their log complete. */
async function webhookWithEvents(n: number) {
  const s = (await api("POST", "/stream", { name: "cam" })).body;
  // Scoped to the stream: the webhooks of earlier tests get none of its events.
  const w = (await api("POST", "/webhook", { name: "logged", url: rx.url, sharedSecret: "k", streamId: s.id })).body;
  const events = createEventSink(t.server.store, createLogger("silent"));
  for (let i = 1; i <= n; i++) await events.raise("stream.started", s.id, { sessionId: `s${i}` });
  await until(async () => (await t.server.store.webhookLog.list(w.id, { limit: n })).items.length === n, `${n} logged attempts`);
  return { w, s };
}

describe("webhook log", () => {
  it("lists attempts newest first, paginated with a Link header like other lists", async () => {
    const { w } = await webhookWithEvents(3);
    const page1 = await api("GET", `/webhook/${w.id}/log?limit=2`);
    expect(page1.status).toBe(200);
    expect(page1.body.map((l: any) => JSON.parse(l.request.body).payload.sessionId)).toEqual(["s3", "s2"]);
    const next = /<([^>]+)>; rel="next"/.exec(page1.headers.get("link") ?? "")?.[1];
    expect(next).toBeDefined();
    const page2 = await api("GET", next!);
    expect(page2.body.map((l: any) => JSON.parse(l.request.body).payload.sessionId)).toEqual(["s1"]);
    expect(page2.headers.get("link")).toBeNull();

    const entry = page1.body[0];
    expect(entry).toMatchObject({
      webhookId: w.id,
      event: "stream.started",
      success: true,
      attempt: 1,
      request: { url: rx.url, method: "POST", headers: { "content-type": "application/json", "user-agent": "onair" } },
      response: { status: 200, statusText: "OK" },
    });
    expect(entry.request.headers["Livepeer-Signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(entry.eventId).toBe(JSON.parse(entry.request.body).id);
    expect(typeof entry.duration).toBe("number");
    expect((await api("GET", `/webhook/${w.id}/log/${entry.id}`)).body).toEqual(entry);
  });

  it("is the owner's only: another user's or a missing webhook is 404, and so is a missing entry", async () => {
    const { w } = await webhookWithEvents(1);
    const [entry] = (await api("GET", `/webhook/${w.id}/log`)).body;
    expect((await bob("GET", `/webhook/${w.id}/log`)).status).toBe(404);
    expect((await bob("GET", `/webhook/${w.id}/log/${entry.id}`)).status).toBe(404);
    expect((await bob("POST", `/webhook/${w.id}/log/${entry.id}/resend`)).status).toBe(404);
    expect((await api("GET", `/webhook/nope/log`)).body).toEqual({ errors: ["webhook nope not found"] });
    expect((await api("GET", `/webhook/${w.id}/log/nope`)).status).toBe(404);
    expect((await api("POST", `/webhook/${w.id}/log/nope/resend`)).status).toBe(404);
    expect((await api("GET", `/webhook/${w.id}/log?limit=0`)).status).toBe(422);
    expect((await api("GET", `/webhook/${w.id}/log?cursor=bogus`)).status).toBe(422);
  });

  it("resend sends the same event id again, newly timestamped and signed, and answers with that attempt", async () => {
    const { w } = await webhookWithEvents(1);
    const [entry] = (await api("GET", `/webhook/${w.id}/log`)).body;
    const before = rx.received.length;
    const res = await api("POST", `/webhook/${w.id}/log/${entry.id}/resend`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ webhookId: w.id, eventId: entry.eventId, success: true, attempt: 1, response: { status: 200 } });
    expect(res.body.id).not.toBe(entry.id);
    const again = rx.received.slice(before);
    expect(again).toHaveLength(1);
    expect(again[0]!.body.id).toBe(entry.eventId);
    expect(again[0]!.body.timestamp).toBeGreaterThan(JSON.parse(entry.request.body).timestamp);
    expect((await api("GET", `/webhook/${w.id}/log`)).body[0].id).toBe(res.body.id);
  });

  it("resend behind a delivery of the stream still being retried answers 202 at once, and goes out after it", async () => {
    const { w, s } = await webhookWithEvents(1);
    const [entry] = (await api("GET", `/webhook/${w.id}/log`)).body;
    answer = ({ body }) => (body.payload.sessionId === "blocker" ? 503 : 200);
    await createEventSink(t.server.store, createLogger("silent")).raise("stream.idle", s.id, { sessionId: "blocker" });
    await rx.waitFor((r) => r.some((x) => x.body.payload.sessionId === "blocker"), "the blocker's first attempt");

    const res = await api("POST", `/webhook/${w.id}/log/${entry.id}/resend`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ webhookId: w.id, eventId: entry.eventId, event: "stream.started", queued: true });

    answer = () => 200;
    await rx.waitFor((r) => r.filter((x) => x.body.id === entry.eventId).length === 2, "the resend");
    const order = rx.received.filter((x) => x.status === 200 && x.body.webhookId === w.id).map((x) => x.body.payload.sessionId);
    expect(order).toEqual(["s1", "blocker", "s1"]);
  });

  it("reports status.lastTriggeredAt and status.lastFailure {timestamp, error, statusCode} on the webhook", async () => {
    const { w } = await webhookWithEvents(1);
    const ok = (await api("GET", `/webhook/${w.id}`)).body;
    expect(ok.status.lastTriggeredAt).toBeGreaterThanOrEqual(w.createdAt);
    expect(ok.status).not.toHaveProperty("lastFailure");

    let failures = 1;
    answer = () => (failures-- > 0 ? { status: 500, body: "receiver is down" } : 200);
    const [entry] = (await api("GET", `/webhook/${w.id}/log`)).body;
    const res = await api("POST", `/webhook/${w.id}/log/${entry.id}/resend`);
    expect(res.body).toMatchObject({ success: false, response: { status: 500, body: "receiver is down" } });
    const failed = (await api("GET", `/webhook/${w.id}`)).body;
    expect(failed.status.lastFailure).toEqual({ timestamp: res.body.createdAt, error: "500 Internal Server Error", statusCode: 500, response: "receiver is down" });
    // The failed resend is retried like any delivery.
    await until(async () => (await t.server.store.webhookLog.list(w.id, { limit: 10 })).items[0]!.success, "the resend's retry");
  });

  it("works with the livepeer SDK: getLogs, getLog, resendLog", async () => {
    const { w } = await webhookWithEvents(2);
    const sdk = new Livepeer({ apiKey: t.key, serverURL: t.apiUrl });
    const logs = await sdk.webhook.getLogs(w.id);
    expect(logs.statusCode).toBe(200);
    expect(logs.data!.map((l) => l.webhookId)).toEqual([w.id, w.id]);
    const one = await sdk.webhook.getLog(w.id, logs.data![0]!.id);
    expect(one.webhookLog).toMatchObject({ id: logs.data![0]!.id, success: true, response: { status: 200 } });
    const resent = await sdk.webhook.resendLog(w.id, logs.data![0]!.id);
    expect(resent.statusCode).toBe(200);
    expect(resent.webhookLog).toMatchObject({ webhookId: w.id, success: true });
  });
});
