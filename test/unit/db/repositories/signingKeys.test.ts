import { publicKeyPem } from "../../../../src/db";

// A JWT's `pub` claim → the PEM a signing key is stored as: Livepeer's clients send the base64
// of the PEM (as the API returns it); the PEM itself, or with CRLF line ends, names the same key.

const PEM = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEabc\n-----END PUBLIC KEY-----";
const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

describe("publicKeyPem", () => {
  it.each([
    ["base64 of the PEM", b64(PEM), PEM],
    ["base64 of the PEM with a trailing newline", b64(PEM + "\n"), PEM],
    ["the PEM itself", PEM, PEM],
    ["the PEM with CRLF line ends", PEM.replace(/\n/g, "\r\n"), PEM],
    ["surrounding space", `  ${b64(PEM)}\n`, PEM],
    ["base64 of something else", b64("hello"), undefined],
    ["a private key", b64(PEM.replace(/PUBLIC/g, "PRIVATE")), undefined],
    ["not base64", "not a key!", undefined],
    ["empty", "", undefined],
  ])("%s", (_name, claim, expected) => {
    expect(publicKeyPem(claim)).toBe(expected);
  });
});
