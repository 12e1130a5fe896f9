import crypto from "node:crypto";
import { Webhook } from "standardwebhooks";
import { createEventSink } from "../../src/events";
import { createLogger } from "../../src/log";
import { startReceiver, type Answer, type Received, type Receiver } from "../helpers/receiver";
import { apiClient, startTestServer, type Api, type TestServer } from "../helpers/server";
import { FAST_RETRIES } from "./fixture";

// Standard Webhooks headers on real deliveries from a real server, verified by the receiver's
// library (the `standardwebhooks` package) as a receiver would, on the raw body as received.

let t: TestServer;
let api: Api;
let rx: Receiver;
/** What the receiver answers; tests change it. */
let answer: (req: { body: any; count: number }) => Answer = () => 200;

beforeAll(async () => {
  rx = await startReceiver((req) => answer(req));
  t = await startTestServer({ ...FAST_RETRIES });
  api = apiClient(t.apiUrl, t.key);
});
afterEach(() => {
  answer = () => 200;
});
afterAll(async () => {
  await t.stop();
  await rx.close();
});

/** A webhook on a stream of its own (so no other test's events reach it) and a raiser of its events. */
async function hookedStream(sharedSecret?: string) {
  const s = (await api("POST", "/stream", { name: "cam" })).body;
  const w = (await api("POST", "/webhook", { name: "std", url: rx.url, streamId: s.id, ...(sharedSecret ? { sharedSecret } : {}) })).body;
  const events = createEventSink(t.server.store, createLogger("silent"));
  return { s, w, raise: (sessionId: string) => events.raise("stream.started", s.id, { sessionId }) };
}

const deliveriesOf = (streamId: string) => rx.received.filter((r) => r.body?.stream?.id === streamId);
const headersOf = (r: Received) => ({
  "webhook-id": String(r.headers["webhook-id"]),
  "webhook-timestamp": String(r.headers["webhook-timestamp"]),
  "webhook-signature": String(r.headers["webhook-signature"]),
});

const whsec = `whsec_${crypto.randomBytes(24).toString("base64")}`;

describe("Standard Webhooks headers", () => {
  it.each([
    ["a whsec_ secret, as the library takes it", whsec, () => new Webhook(whsec)],
    ["a plain secret, in the library's raw format", "plain s3cret", () => new Webhook("plain s3cret", { format: "raw" })],
  ])("verify a delivered event with %s, and not with a wrong secret or a tampered body", async (_label, secret, receiverLib) => {
    const { s, raise } = await hookedStream(secret);
    await raise("sess-1");
    await rx.waitFor(() => deliveriesOf(s.id).length === 1, "the delivery");
    const [d] = deliveriesOf(s.id);
    const headers = headersOf(d!);

    expect(receiverLib().verify(d!.raw, headers)).toEqual(d!.body);
    expect(headers["webhook-id"]).toBe(d!.body.id);
    // Whole seconds of the attempt, whose milliseconds the body carries.
    expect(headers["webhook-timestamp"]).toBe(String(Math.floor(d!.body.timestamp / 1000)));
    // Livepeer-Signature is still there, unchanged.
    expect(d!.headers["livepeer-signature"]).toMatch(new RegExp(`^t=${d!.body.timestamp},v1=[0-9a-f]{64}$`));

    expect(() => new Webhook("wrong secret", { format: "raw" }).verify(d!.raw, headers)).toThrow("No matching signature");
    expect(() => new Webhook(`whsec_${crypto.randomBytes(24).toString("base64")}`).verify(d!.raw, headers)).toThrow("No matching signature");
    const tampered = d!.raw.replace('"sess-1"', '"sess-2"');
    expect(tampered).not.toBe(d!.raw);
    expect(() => receiverLib().verify(tampered, headers)).toThrow("No matching signature");
  });

  it("keeps the event id as webhook-id across retries, each attempt signed for its own time", async () => {
    const { s, raise } = await hookedStream(whsec);
    // The first attempt fails (retried), the second is taken.
    answer = (req) => (req.body?.stream?.id === s.id && deliveriesOf(s.id).length === 0 ? 503 : 200);
    await raise("sess-retry");
    await rx.waitFor(() => deliveriesOf(s.id).length === 2, "the retry");
    const [first, second] = deliveriesOf(s.id);
    expect([first!.status, second!.status]).toEqual([503, 200]);
    expect(headersOf(first!)["webhook-id"]).toBe(first!.body.id);
    expect(headersOf(second!)["webhook-id"]).toBe(first!.body.id);
    for (const d of [first!, second!]) {
      expect(new Webhook(whsec).verify(d.raw, headersOf(d))).toEqual(d.body);
      expect(headersOf(d)["webhook-timestamp"]).toBe(String(Math.floor(d.body.timestamp / 1000)));
    }
  });

  it("are not sent without a shared secret, like Livepeer-Signature", async () => {
    const { s, raise } = await hookedStream();
    await raise("sess-unsigned");
    await rx.waitFor(() => deliveriesOf(s.id).length === 1, "the delivery");
    const { headers } = deliveriesOf(s.id)[0]!;
    expect(Object.keys(headers).filter((h) => h.startsWith("webhook-") || h === "livepeer-signature")).toEqual([]);
  });
});
