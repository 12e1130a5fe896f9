import crypto from "node:crypto";
import { ADAPTERS, deleteFixtureKeys, startDelivery, until, type Delivery } from "./fixture";
import { startReceiver, type Answer, type Receiver } from "../helpers/receiver";

// Events → signed webhook deliveries, end to end with real receivers, for both queue adapters.

afterAll(deleteFixtureKeys);

/** What a receiver does with the header, using Node's crypto only (as the README shows). */
function signatureVerifies(raw: string, header: string | string[] | undefined, secret: string): boolean {
  const fields = Object.fromEntries(String(header).split(",").map((kv) => kv.split("=") as [string, string]));
  const mac = crypto.createHmac("sha256", secret).update(raw).digest("hex");
  return fields.v1 === mac;
}

describe.each(ADAPTERS)("webhook delivery (%s queue)", (adapter) => {
  let d: Delivery;
  let receivers: Receiver[];
  const receiver = async (answer?: (req: { body: any; count: number }) => Answer) => {
    const r = await startReceiver(answer);
    receivers.push(r);
    return r;
  };

  beforeEach(async () => {
    receivers = [];
    d = await startDelivery(adapter);
  });
  afterEach(async () => {
    await d.stop();
    await Promise.all(receivers.map((r) => r.close()));
  });

  it("POSTs {id, webhookId, createdAt, timestamp, event, stream, payload} within 100 ms, signed so that Node's crypto verifies it", async () => {
    const rx = await receiver();
    const w = await d.webhook(rx.url, { sharedSecret: "s3cret" });
    const stream = await d.stream("studio");
    const latencies: number[] = [];
    for (let i = 1; i <= 10; i++) {
      const t0 = performance.now();
      await d.events.raise("stream.started", stream.id, { sessionId: `sess-${i}` });
      await rx.waitFor((r) => r.length === i, `delivery ${i}`);
      latencies.push(rx.received[i - 1]!.at - t0);
    }

    const first = rx.received[0]!;
    expect(Object.keys(first.body)).toEqual(["id", "webhookId", "createdAt", "timestamp", "event", "stream", "payload"]);
    expect(first.body).toMatchObject({ webhookId: w.id, event: "stream.started", payload: { sessionId: "sess-1" } });
    expect(first.body.stream).toMatchObject({ id: stream.id, name: "studio", kind: "stream", playbackId: stream.playbackId });
    expect(first.body.stream).not.toHaveProperty("streamKey");
    expect(first.raw).not.toContain(stream.streamKey!);
    expect(first.body.timestamp).toBeGreaterThanOrEqual(first.body.createdAt);
    expect(first.headers["content-type"]).toBe("application/json");
    expect(first.headers["user-agent"]).toBe("onair");
    expect(first.headers["livepeer-signature"]).toBe(`t=${first.body.timestamp},v1=${crypto.createHmac("sha256", "s3cret").update(first.raw).digest("hex")}`);
    expect(rx.received.every((r) => signatureVerifies(r.raw, r.headers["livepeer-signature"], "s3cret"))).toBe(true);
    expect(signatureVerifies(first.raw, first.headers["livepeer-signature"], "wrong")).toBe(false);
    expect(new Set(rx.received.map((r) => r.body.id)).size).toBe(10);

    // Within 100 ms of raise (about 1 ms embedded, 3 ms BullMQ here), as the median: a queue
    // that polls would miss it on most deliveries, while a loaded CI machine's pauses (two of
    // ten over 100 ms were seen) cannot fail the run.
    latencies.sort((a, b) => a - b);
    expect(latencies[4]).toBeLessThan(100);
  });

  it("sends no signature header for a webhook without a secret", async () => {
    const rx = await receiver();
    await d.webhook(rx.url);
    await d.events.raise("stream.idle", (await d.stream()).id, { sessionId: "s" });
    await rx.waitFor((r) => r.length === 1, "the delivery");
    expect(rx.received[0]!.headers).not.toHaveProperty("livepeer-signature");
  });

  it("retries 503 three times then stops at 200: the same event id four times, with growing gaps, each attempt logged", async () => {
    const rx = await receiver(({ count }) => (count <= 3 ? 503 : 200));
    const w = await d.webhook(rx.url, { sharedSecret: "k" });
    await d.events.raise("stream.started", (await d.stream()).id, { sessionId: "s" });
    await rx.waitFor((r) => r.length === 4, "four attempts");

    const ids = rx.received.map((r) => r.body.id);
    expect(new Set(ids).size).toBe(1);
    expect(rx.received.map((r) => r.status)).toEqual([503, 503, 503, 200]);
    // Each attempt is newly timestamped and signed.
    expect(new Set(rx.received.map((r) => r.body.timestamp)).size).toBe(4);
    expect(rx.received.every((r) => signatureVerifies(r.raw, r.headers["livepeer-signature"], "k"))).toBe(true);
    // The compressed schedule (no jitter here) waits 50, 100, then 200 ms: each gap at least its
    // doubled wait. A loaded machine can only lengthen a gap, never shorten it.
    const gaps = rx.received.slice(1).map((r, i) => r.at - rx.received[i]!.at);
    [50, 100, 200].forEach((wait, i) => expect(gaps[i]).toBeGreaterThanOrEqual(wait - 5));
    expect(gaps[2]).toBeGreaterThan(gaps[0]!);

    await waitForLog(d, w.id, 4);
    const log = (await d.store.webhookLog.list(w.id, { limit: 10 })).items;
    expect(log.map((l) => [l.attempt, l.success, l.statusCode])).toEqual([[4, true, 200], [3, false, 503], [2, false, 503], [1, false, 503]]);
    const status = (await d.store.webhooks.get(w.id))!;
    expect(status.lastTriggeredAt).toBe(log[0]!.createdAt);
    expect(status.lastFailure).toMatchObject({ timestamp: log[1]!.createdAt, statusCode: 503, error: "503 Service Unavailable" });
  });

  it("does not retry a 400; the stream's next event goes out after it", async () => {
    const rx = await receiver(({ body }) => (body.event === "stream.started" ? 400 : 200));
    const w = await d.webhook(rx.url);
    const s = await d.stream();
    await d.events.raise("stream.started", s.id, { sessionId: "s" });
    await d.events.raise("stream.idle", s.id, { sessionId: "s" });
    // The idle event waits in the same lane: once it arrives, the 400 was settled for good.
    await rx.waitFor((r) => r.some((x) => x.body.event === "stream.idle"), "the next event");
    expect(rx.received.map((r) => [r.body.event, r.status])).toEqual([["stream.started", 400], ["stream.idle", 200]]);
    await waitForLog(d, w.id, 2);
    expect((await d.store.webhooks.get(w.id))!.lastFailure).toMatchObject({ statusCode: 400, error: "400 Bad Request" });
  });

  it("sends one stream's events in the order raised, later ones waiting behind a retried one; other streams do not wait", async () => {
    let firstTries = 0;
    const rx = await receiver(({ body }) => (body.payload.sessionId === "a1" && ++firstTries <= 2 ? 503 : 200));
    await d.webhook(rx.url);
    const a = await d.stream("a");
    const b = await d.stream("b");
    await d.events.raise("stream.started", a.id, { sessionId: "a1" });
    await d.events.raise("stream.idle", a.id, { sessionId: "a2" });
    await d.events.raise("stream.started", a.id, { sessionId: "a3" });
    await d.events.raise("stream.started", b.id, { sessionId: "b1" });
    await rx.waitFor((r) => r.filter((x) => x.status === 200).length === 4, "all four delivered");

    const seen = rx.received.map((r) => `${r.body.payload.sessionId}:${r.status}`);
    const onA = seen.filter((x) => x.startsWith("a"));
    expect(onA).toEqual(["a1:503", "a1:503", "a1:200", "a2:200", "a3:200"]);
    // Stream b's lane did not wait for a1's retries.
    expect(seen.indexOf("b1:200")).toBeLessThan(seen.indexOf("a1:200"));
  });

  it("fans an event out once to each of the owner's webhooks registered for it, and to nobody else", async () => {
    const rx = await receiver();
    const s = await d.stream();
    const other = await d.stream("other");
    const bob = (await d.store.users.getOrCreate("bob")).id;
    await d.webhook(`${rx.url}?all`);
    await d.webhook(`${rx.url}?scoped`, { streamId: s.id });
    await d.webhook(`${rx.url}?otherStream`, { streamId: other.id });
    await d.webhook(`${rx.url}?otherEvent`, { events: ["recording.ready"] });
    await d.webhook(`${rx.url}?bob`, {}, bob);
    await d.events.raise("stream.started", s.id, { sessionId: "s" });
    // A sentinel through another lane: once it is in, the event's deliveries were made.
    await d.events.raise("stream.idle", other.id, { sessionId: "sentinel" });
    await rx.waitFor((r) => r.filter((x) => x.body.payload.sessionId === "sentinel").length === 2, "the sentinels");
    await rx.waitFor((r) => r.filter((x) => x.body.payload.sessionId === "s").length === 2, "the event");
    expect(rx.received.filter((r) => r.body.payload.sessionId === "s").map((r) => r.path).sort()).toEqual(["/hook?all", "/hook?scoped"]);
    expect(new Set(rx.received.filter((r) => r.body.payload.sessionId === "s").map((r) => r.body.id)).size).toBe(1);
  });

  it("delivers 1,000 events to a live receiver, each exactly once, in order per stream", async () => {
    const rx = await receiver();
    const w = await d.webhook(rx.url, { sharedSecret: "k" });
    const streams = [];
    for (let i = 0; i < 10; i++) streams.push(await d.stream(`s${i}`));
    for (let i = 0; i < 1000; i++) {
      await d.events.raise(i % 2 ? "stream.idle" : "stream.started", streams[i % 10]!.id, { sessionId: String(i) });
    }
    await rx.waitFor((r) => r.length >= 1000, "1,000 deliveries", 30_000);
    const sessions = rx.received.map((r) => Number(r.body.payload.sessionId));
    expect(new Set(sessions).size).toBe(1000);
    expect(new Set(rx.received.map((r) => r.body.id)).size).toBe(1000);
    for (const s of streams) {
      const order = rx.received.filter((r) => r.body.stream.id === s.id).map((r) => Number(r.body.payload.sessionId));
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
    // Exactly once, not "at least": every delivery settled after one attempt, so no POST is
    // still to come.
    await waitForLog(d, w.id, 1000);
    const settled = await d.store.db.all("SELECT status, COUNT(*) AS n FROM webhook_deliveries GROUP BY status");
    expect(settled).toEqual([{ status: "delivered", n: 1000 }]);
    expect(await d.store.db.get("SELECT COUNT(*) AS n FROM webhook_log")).toEqual({ n: 1000 });
    expect(rx.received).toHaveLength(1000);
  });
});

/** Until `n` attempts of the webhook are logged (the log is written right after the response). */
function waitForLog(d: Delivery, webhookId: string, n: number): Promise<void> {
  return until(async () => (await d.store.webhookLog.list(webhookId, { limit: n })).items.length >= n, `${n} log entries`);
}
