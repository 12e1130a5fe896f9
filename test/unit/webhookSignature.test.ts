import crypto from "node:crypto";
import { signatureHeader, verifySignature } from "../../src/webhooks";

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
