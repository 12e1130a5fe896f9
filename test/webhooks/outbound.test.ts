import http from "node:http";
import type { AddressInfo } from "node:net";
import { RESPONSE_BODY_LIMIT } from "../../src/webhooks";
import { startDelivery, until, type Delivery } from "./fixture";
import { startReceiver, type Receiver } from "../helpers/receiver";

// What onair's requests to receivers may and may not do: timeouts, resets, redirects, large
// responses, private addresses, deleted webhooks and streams. These concern the sender, not
// the queue, so they run on the embedded queue only.

let d: Delivery | undefined;
const receivers: Receiver[] = [];
const servers: http.Server[] = [];

afterEach(async () => {
  await d?.stop();
  d = undefined;
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeAllConnections();
        }),
    ),
  );
});

async function receiver(answer: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(answer);
  receivers.push(r);
  return r;
}

const logOf = (webhookId: string) => d!.store.webhookLog.list(webhookId, { limit: 100 }).items.reverse();
const statusesOf = () => d!.store.db.prepare("SELECT status FROM webhook_deliveries ORDER BY seq").all().map((r: any) => r.status);

it("gives up on an attempt after WEBHOOK_TIMEOUT_MS and retries it", async () => {
  d = await startDelivery("embedded", { WEBHOOK_TIMEOUT_MS: "200" });
  const rx = await receiver(({ count }) => (count === 1 ? "hang" : 200));
  const w = d.webhook(rx.url);
  d.events.raise("stream.started", d.stream().id, { sessionId: "s" });
  await until(() => logOf(w.id).length === 2, "two attempts");
  const [first, second] = logOf(w.id);
  expect(first).toMatchObject({ attempt: 1, success: false, statusCode: null, error: "no response within 200 ms" });
  expect(first!.durationMs).toBeGreaterThanOrEqual(195);
  expect(second).toMatchObject({ attempt: 2, success: true, statusCode: 200 });
  expect(rx.received[0]!.body.id).toBe(rx.received[1]!.body.id);
});

it("retries after a network error (connection dropped)", async () => {
  d = await startDelivery("embedded");
  const rx = await receiver(({ count }) => (count === 1 ? "reset" : 204));
  const w = d.webhook(rx.url);
  d.events.raise("stream.started", d.stream().id, { sessionId: "s" });
  await until(() => logOf(w.id).length === 2, "two attempts");
  expect(logOf(w.id).map((l) => [l.attempt, l.success, l.statusCode])).toEqual([[1, false, null], [2, true, 204]]);
  expect(logOf(w.id)[0]!.error).toMatch(/ECONNRESET|socket hang up/);
});

it("does not follow a redirect: the attempt fails for good and the new location is never called", async () => {
  d = await startDelivery("embedded");
  const elsewhere = await receiver(() => 200);
  const rx = await receiver(() => ({ status: 302, headers: { location: elsewhere.url } }));
  const w = d.webhook(rx.url);
  const s = d.stream();
  d.events.raise("stream.started", s.id, { sessionId: "s" });
  await until(() => statusesOf()[0] === "failed", "the delivery to fail");
  expect(rx.received).toHaveLength(1);
  expect(elsewhere.received).toHaveLength(0);
  expect(logOf(w.id)).toMatchObject([{ attempt: 1, success: false, statusCode: 302, error: "302 Found: redirects are not followed" }]);
});

it("reads no more than the response cap, even from a receiver that never stops sending", async () => {
  d = await startDelivery("embedded", { WEBHOOK_TIMEOUT_MS: "5000" });
  const endless = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "text/plain" });
    const chunk = "x".repeat(16 * 1024);
    const timer = setInterval(() => res.write(chunk), 5);
    res.on("close", () => clearInterval(timer));
  });
  servers.push(endless);
  await new Promise<void>((r) => endless.listen(0, "127.0.0.1", r));
  const w = d.webhook(`http://127.0.0.1:${(endless.address() as AddressInfo).port}/`);
  d.events.raise("stream.started", d.stream().id, { sessionId: "s" });
  await until(() => statusesOf()[0] === "delivered", "the delivery");
  const [entry] = logOf(w.id);
  expect(entry!.responseBody!.length).toBeLessThanOrEqual(RESPONSE_BODY_LIMIT);
  expect(entry!.responseBody!.length).toBeGreaterThan(0);
  // Done when the cap was reached, not when the 5 s timeout hit.
  expect(entry!.durationMs).toBeLessThan(1_000);
});

describe("WEBHOOK_BLOCK_PRIVATE", () => {
  it.each([
    ["an IP literal", (port: number) => `http://127.0.0.1:${port}/hook`, /127\.0\.0\.1 is a loopback address \(WEBHOOK_BLOCK_PRIVATE\)/],
    ["a name resolving to loopback", (port: number) => `http://localhost:${port}/hook`, /localhost resolves to (127\.0\.0\.1|::1), a loopback address \(WEBHOOK_BLOCK_PRIVATE\)/],
  ])("refuses %s without connecting, and does not retry", async (_label, url, error) => {
    d = await startDelivery("embedded", { WEBHOOK_BLOCK_PRIVATE: "1" });
    const rx = await receiver(() => 200);
    const w = d.webhook(url(rx.port));
    d.events.raise("stream.started", d.stream().id, { sessionId: "s" });
    await until(() => statusesOf()[0] === "failed", "the delivery to fail");
    expect(rx.received).toHaveLength(0);
    expect(logOf(w.id)).toHaveLength(1);
    expect(logOf(w.id)[0]!.error).toMatch(error);
    expect(d.store.webhooks.get(w.id)!.lastFailure!.error).toMatch(error);
  });

  it("is off by default: a self-hosted receiver on localhost gets its events", async () => {
    d = await startDelivery("embedded");
    const rx = await receiver(() => 200);
    d.webhook(`http://localhost:${rx.port}/hook`);
    d.events.raise("stream.started", d.stream().id, { sessionId: "s" });
    await rx.waitFor((r) => r.length === 1, "the delivery");
    expect(rx.received[0]!.status).toBe(200);
  });
});

it("cancels the pending deliveries of a deleted webhook instead of sending them", async () => {
  d = await startDelivery("embedded");
  const rx = await receiver(() => 503);
  const w = d.webhook(rx.url);
  const s = d.stream();
  d.events.raise("stream.started", s.id, { sessionId: "1" });
  d.events.raise("stream.idle", s.id, { sessionId: "2" });
  await rx.waitFor((r) => r.length === 1, "the first attempt");
  d.store.webhooks.delete(w.id);
  await until(() => statusesOf().every((x) => x === "cancelled"), "both deliveries to be cancelled");
  expect(rx.received.map((r) => r.body.payload.sessionId)).toEqual(["1"]);
});

it("still tells the owner about a stream deleted before its event (stream.idle after DELETE)", async () => {
  d = await startDelivery("embedded");
  const rx = await receiver(() => 200);
  d.webhook(rx.url);
  const s = d.stream("doomed");
  d.store.streams.softDelete(s.id);
  d.events.raise("stream.idle", s.id, { sessionId: "last" });
  await rx.waitFor((r) => r.length === 1, "the delivery");
  expect(rx.received[0]!.body.stream).toMatchObject({ id: s.id, name: "doomed" });
  expect(rx.received[0]!.body.stream).not.toHaveProperty("streamKey");
});

it("keeps the stream as it was when the event was raised, whatever happens to it later", async () => {
  d = await startDelivery("embedded");
  const rx = await receiver(({ count }) => (count === 1 ? 503 : 200));
  d.webhook(rx.url);
  const s = d.stream("before");
  d.events.raise("stream.started", s.id, { sessionId: "s" });
  d.store.streams.update(s.id, { name: "after" });
  await rx.waitFor((r) => r.length === 2, "the retry");
  expect(rx.received.map((r) => r.body.stream.name)).toEqual(["before", "before"]);
});
