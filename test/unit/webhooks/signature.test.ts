import crypto from "node:crypto";
import { Webhook } from "standardwebhooks";
import { signatureHeader, standardWebhooksHeaders, standardWebhooksKey, verifySignature } from "../../../src/webhooks";

// The receiver's side, written the way the README tells receivers to: Node's crypto only.
function receiverVerifies(rawBody: string, header: string, secret: string): boolean {
  const v1 = Object.fromEntries(header.split(",").map((kv) => kv.split("=") as [string, string])).v1 ?? "";
  const mac = crypto.createHmac("sha256", secret).update(rawBody).digest("hex");
  return v1.length === mac.length && crypto.timingSafeEqual(Buffer.from(v1), Buffer.from(mac));
}

describe("Livepeer-Signature", () => {
  it.each([
    ['{"id":"e1","event":"stream.started"}', "s3cret", 1_700_000_000_000],
    ["", "k", 0],
    ['{"name":"caméra ✓"}', "ünïcode secret", 1_234],
    ["x".repeat(100_000), "a".repeat(1024), 99],
  ])("signs %#: t is the attempt time, v1 the hex HMAC-SHA256 of the raw body", (body, secret, t) => {
    const header = signatureHeader(body, secret, t);
    const expected = crypto.createHmac("sha256", secret).update(body, "utf8").digest("hex");
    expect(header).toBe(`t=${t},v1=${expected}`);
    expect(receiverVerifies(body, header, secret)).toBe(true);
    expect(verifySignature(body, header, secret)).toBe(true);
  });

  it("matches a known vector", () => {
    // echo -n '{"a":1}' | openssl dgst -sha256 -hmac key
    expect(signatureHeader('{"a":1}', "key", 5)).toBe("t=5,v1=88a67f24bbcdaed0e6c997404bb79a743baf44c6bab2f4c27328e3009d22e342");
  });

  it.each([
    ["another body", '{"id":"e2"}', "s3cret"],
    ["another secret", '{"id":"e1"}', "guess"],
  ])("does not verify with %s", (_label, body, secret) => {
    const header = signatureHeader('{"id":"e1"}', "s3cret", 1);
    expect(receiverVerifies(body, header, secret)).toBe(false);
    expect(verifySignature(body, header, secret)).toBe(false);
  });

  it.each(["", "t=1", "v1=zz", "t=1,v1=", "garbage"])("verifySignature refuses the malformed header %j", (header) => {
    expect(verifySignature("{}", header, "s")).toBe(false);
  });
});

describe("Standard Webhooks headers", () => {
  const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

  it.each([
    ["a whsec_ secret: the base64 remainder, decoded", `whsec_${b64("sixteen byte key")}`, Buffer.from("sixteen byte key")],
    ["whsec_ with binary key bytes", "whsec_AAEC/w==", Buffer.from([0, 1, 2, 255])],
    ["a plain secret: its UTF-8 bytes", "s3cret", Buffer.from("s3cret")],
    ["a non-ASCII secret: UTF-8, not Latin-1", "ünïcode", Buffer.from("ünïcode", "utf8")],
    ["whsec_ with nothing after it: the whole secret", "whsec_", Buffer.from("whsec_")],
    ["whsec_ with unpadded base64: the whole secret", "whsec_abc", Buffer.from("whsec_abc")],
    ["whsec_ with characters outside base64: the whole secret", "whsec_not-base64!", Buffer.from("whsec_not-base64!")],
    ["a base64-looking secret without the prefix: its bytes", b64("key"), Buffer.from(b64("key"))],
  ])("keys %s", (_label, secret, key) => {
    expect(standardWebhooksKey(secret).equals(key)).toBe(true);
  });

  it.each([
    ["evt_1", '{"id":"evt_1","event":"stream.started"}', "s3cret", 1_700_000_000_999, "1700000000"],
    ["e", "", "k", 0, "0"],
    ["6b0c7a9e", '{"name":"caméra ✓"}', `whsec_${b64("0123456789abcdef")}`, 1_234, "1"],
    ["x", "x".repeat(100_000), "a".repeat(1024), 99_999, "99"],
  ])("signs %#: id is the event id, timestamp whole seconds, v1 the base64 HMAC of id.timestamp.body", (id, body, secret, t, seconds) => {
    const h = standardWebhooksHeaders(id, body, secret, t);
    const mac = crypto.createHmac("sha256", standardWebhooksKey(secret)).update(`${id}.${seconds}.${body}`, "utf8").digest("base64");
    expect(h).toEqual({ "webhook-id": id, "webhook-timestamp": seconds, "webhook-signature": `v1,${mac}` });
  });

  it.each([
    // printf 'msg_1.5.{"a":1}' | openssl dgst -sha256 -hmac key -binary | base64
    ["msg_1", '{"a":1}', "key", 5, "v1,pA7vp+xJMxc+LXYeA0Cb4lpCxhT61Vd4YpnxpcIujGc="],
    // The Standard Webhooks libraries' own test vector (svix, standardwebhooks).
    ["msg_p5jXN8AQM9LWM0D4loKWxJek", '{"test": 2432232314}', "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1614265330, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="],
  ])("matches the known vector %#", (id, body, secret, seconds, signature) => {
    expect(standardWebhooksHeaders(id, body, secret, seconds * 1000)["webhook-signature"]).toBe(signature);
  });

  // The library a receiver uses: a whsec_ secret as it is, any other in its raw format.
  const receiverFor = (secret: string) => (secret.startsWith("whsec_") ? new Webhook(secret) : new Webhook(secret, { format: "raw" }));

  it.each([`whsec_${b64("a key of thirty-two bytes, really")}`, "s3cret"])("verifies with the standardwebhooks package (%s)", (secret) => {
    const body = '{"id":"evt_9","event":"stream.idle"}';
    const headers = standardWebhooksHeaders("evt_9", body, secret, Date.now());
    expect(receiverFor(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
    expect(() => receiverFor(secret).verify(body.replace("idle", "started"), { ...headers })).toThrow("No matching signature");
    expect(() => receiverFor("another").verify(body, { ...headers })).toThrow("No matching signature");
    expect(() => receiverFor(secret).verify(body, { ...headers, "webhook-id": "evt_10" })).toThrow("No matching signature");
  });
});
