import http from "node:http";
import type { AddressInfo } from "node:net";
import { HOW_TO_ALLOW, OutboundPolicy, type Lookup } from "../../src/outbound";
import { RESPONSE_BODY_LIMIT } from "../../src/webhooks";
import { WebhookSender } from "../../src/webhooks/send";
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

const logOf = async (webhookId: string) => (await d!.store.webhookLog.list(webhookId, { limit: 100 })).items.reverse();
const statusesOf = async () => (await d!.store.db.all<{ status: string }>("SELECT status FROM webhook_deliveries ORDER BY seq")).map((r) => r.status);

it("gives up on an attempt after WEBHOOK_TIMEOUT_MS and retries it", async () => {
  d = await startDelivery("embedded", { WEBHOOK_TIMEOUT_MS: "200" });
  const rx = await receiver(({ count }) => (count === 1 ? "hang" : 200));
  const w = await d.webhook(rx.url);
  await d.events.raise("stream.started", (await d.stream()).id, { sessionId: "s" });
  await until(async () => (await logOf(w.id)).length === 2, "two attempts");
  const [first, second] = await logOf(w.id);
  expect(first).toMatchObject({ attempt: 1, success: false, statusCode: null, error: "no response within 200 ms" });
  expect(first!.durationMs).toBeGreaterThanOrEqual(195);
  expect(second).toMatchObject({ attempt: 2, success: true, statusCode: 200 });
  expect(rx.received[0]!.body.id).toBe(rx.received[1]!.body.id);
});

it("retries after a network error (connection dropped)", async () => {
  d = await startDelivery("embedded");
  const rx = await receiver(({ count }) => (count === 1 ? "reset" : 204));
  const w = await d.webhook(rx.url);
  await d.events.raise("stream.started", (await d.stream()).id, { sessionId: "s" });
  await until(async () => (await logOf(w.id)).length === 2, "two attempts");
  expect((await logOf(w.id)).map((l) => [l.attempt, l.success, l.statusCode])).toEqual([[1, false, null], [2, true, 204]]);
  expect((await logOf(w.id))[0]!.error).toMatch(/ECONNRESET|socket hang up/);
});

it("does not follow a redirect: the attempt fails for good and the new location is never called", async () => {
  d = await startDelivery("embedded");
  const elsewhere = await receiver(() => 200);
  const rx = await receiver(() => ({ status: 302, headers: { location: elsewhere.url } }));
  const w = await d.webhook(rx.url);
  const s = await d.stream();
  await d.events.raise("stream.started", s.id, { sessionId: "s" });
  await until(async () => (await statusesOf())[0] === "failed", "the delivery to fail");
  expect(rx.received).toHaveLength(1);
  expect(elsewhere.received).toHaveLength(0);
  expect((await logOf(w.id))).toMatchObject([{ attempt: 1, success: false, statusCode: 302, error: "302 Found: redirects are not followed" }]);
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
  const w = await d.webhook(`http://127.0.0.1:${(endless.address() as AddressInfo).port}/`);
  await d.events.raise("stream.started", (await d.stream()).id, { sessionId: "s" });
  await until(async () => (await statusesOf())[0] === "delivered", "the delivery");
  const [entry] = await logOf(w.id);
  expect(entry!.responseBody!.length).toBeLessThanOrEqual(RESPONSE_BODY_LIMIT);
  expect(entry!.responseBody!.length).toBeGreaterThan(0);
  // Done when the cap was reached, not when the 5 s timeout hit.
  expect(entry!.durationMs).toBeLessThan(1_000);
});

describe("the outbound policy", () => {
  /** A loopback listener that counts TCP connections: a refused destination must see none. */
  async function connectionCounter(): Promise<{ port: number; connections: () => number }> {
    let count = 0;
    const server = http.createServer();
    server.on("connection", (socket) => {
      count++;
      socket.destroy();
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return { port: (server.address() as AddressInfo).port, connections: () => count };
  }

  // Webhooks stored as they were before the policy (the API refuses these urls now, see
  // test/api/outbound.test.ts): delivery checks again, at every attempt.
  it.each([
    ["127.0.0.1", (port: number) => `http://127.0.0.1:${port}/hook`],
    ["[::ffff:127.0.0.1]", (port: number) => `http://[::ffff:127.0.0.1]:${port}/hook`],
    ["a name resolving to loopback", (port: number) => `http://localhost:${port}/hook`],
  ])("refuses %s by default before any connection is opened, in the same coarse words, and does not retry", async (_label, url) => {
    d = await startDelivery("embedded", { DESTINATION_ALLOW_HOSTS: "" });
    const listener = await connectionCounter();
    const w = await d.webhook(url(listener.port));
    await d.events.raise("stream.started", (await d.stream()).id, { sessionId: "s" });
    await until(async () => (await statusesOf())[0] === "failed", "the delivery to fail");
    expect(listener.connections()).toBe(0);
    const log = await logOf(w.id);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ success: false, statusCode: null, responseBody: null });
    expect(log[0]!.error).toMatch(/^destination refused by the outbound policy: (127\.0\.0\.1|::ffff:7f00:1|localhost) is not a public address \(an operator can allow it with ALLOW_PRIVATE_DESTINATIONS=true or by listing the host in DESTINATION_ALLOW_HOSTS\)$/);
    expect((await d.store.webhooks.get(w.id))!.lastFailure).toEqual({ timestamp: expect.any(Number), error: log[0]!.error });
  });

  it.each([
    ["DESTINATION_ALLOW_HOSTS=127.0.0.1", { DESTINATION_ALLOW_HOSTS: "127.0.0.1" }, (port: number) => `http://127.0.0.1:${port}/hook`],
    ["ALLOW_PRIVATE_DESTINATIONS=true", { DESTINATION_ALLOW_HOSTS: "", ALLOW_PRIVATE_DESTINATIONS: "true" }, (port: number) => `http://localhost:${port}/hook`],
  ])("a loopback receiver allowed with %s gets its events, and its answer is kept", async (_label, env, url) => {
    d = await startDelivery("embedded", env);
    const rx = await receiver(() => ({ status: 200, body: "thanks" }));
    const w = await d.webhook(url(rx.port));
    await d.events.raise("stream.started", (await d.stream()).id, { sessionId: "s" });
    await rx.waitFor((r) => r.length === 1, "the delivery");
    await until(async () => (await statusesOf())[0] === "delivered", "the delivery to settle");
    expect((await logOf(w.id))[0]).toMatchObject({ success: true, statusCode: 200, responseBody: "thanks" });
  });
});

describe("the sender connects to the address the policy checked, and to no other", () => {
  // Names that exist only in the policy's own resolver: had the sender asked DNS again, they
  // would not resolve at all.
  const answers = (table: Record<string, string>): Lookup => async (host) => {
    if (!table[host]) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return [{ address: table[host]!, family: 4 }];
  };

  it("a name checked as 127.0.0.1 (allowed) is connected to at 127.0.0.1, with its own Host header", async () => {
    const rx = await receiver(() => 204);
    const policy = new OutboundPolicy({ allowPrivate: false, allowHosts: ["127.0.0.1"] }, answers({ "receiver.rebind.test": "127.0.0.1" }));
    const sender = new WebhookSender({ timeoutMs: 2_000, policy });
    try {
      const result = await sender.post(`http://receiver.rebind.test:${rx.port}/hook`, "{}", { "content-type": "application/json" });
      expect(result).toMatchObject({ statusCode: 204 });
      expect(rx.received[0]!.headers.host).toBe(`receiver.rebind.test:${rx.port}`);
    } finally {
      sender.close();
    }
  });

  it("a name that resolves to a private address is refused without a connection, its address in the operator's detail only", async () => {
    const policy = new OutboundPolicy({ allowPrivate: false, allowHosts: [] }, answers({ "evil.rebind.test": "10.0.0.1" }));
    const sender = new WebhookSender({ timeoutMs: 2_000, policy });
    try {
      const result = await sender.post("http://evil.rebind.test/hook", "{}", {});
      expect(result).toMatchObject({ failure: "refused", refusedDetail: "evil.rebind.test resolves to 10.0.0.1, a private address" });
      expect(result.error).toBe(`destination refused by the outbound policy: evil.rebind.test is not a public address (${HOW_TO_ALLOW})`);
    } finally {
      sender.close();
    }
  });
});

it("cancels the pending deliveries of a deleted webhook instead of sending them", async () => {
  d = await startDelivery("embedded");
  const rx = await receiver(() => 503);
  const w = await d.webhook(rx.url);
  const s = await d.stream();
  await d.events.raise("stream.started", s.id, { sessionId: "1" });
  await d.events.raise("stream.idle", s.id, { sessionId: "2" });
  await rx.waitFor((r) => r.length === 1, "the first attempt");
  await d.store.webhooks.delete(w.id);
  await until(async () => (await statusesOf()).every((x) => x === "cancelled"), "both deliveries to be cancelled");
  expect(rx.received.map((r) => r.body.payload.sessionId)).toEqual(["1"]);
});

it("still tells the owner about a stream deleted before its event (stream.idle after DELETE)", async () => {
  d = await startDelivery("embedded");
  const rx = await receiver(() => 200);
  await d.webhook(rx.url);
  const s = await d.stream("doomed");
  await d.store.streams.softDelete(s.id);
  await d.events.raise("stream.idle", s.id, { sessionId: "last" });
  await rx.waitFor((r) => r.length === 1, "the delivery");
  expect(rx.received[0]!.body.stream).toMatchObject({ id: s.id, name: "doomed" });
  expect(rx.received[0]!.body.stream).not.toHaveProperty("streamKey");
});

it("keeps the stream as it was when the event was raised, whatever happens to it later", async () => {
  d = await startDelivery("embedded");
  const rx = await receiver(({ count }) => (count === 1 ? 503 : 200));
  await d.webhook(rx.url);
  const s = await d.stream("before");
  await d.events.raise("stream.started", s.id, { sessionId: "s" });
  await d.store.streams.update(s.id, { name: "after" });
  await rx.waitFor((r) => r.length === 2, "the retry");
  expect(rx.received.map((r) => r.body.stream.name)).toEqual(["before", "before"]);
});
