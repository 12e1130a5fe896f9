import { spriteCredential, spriteUrl } from "../../../src/http/storyboard";
import type { PlaybackPolicy } from "../../../src/shapes";

// The sprite URL a storyboard VTT names: its build's id, and only the credential the gate checks
// for the stream's policy, URL-encoded; nothing else of the VTT's query.

describe("spriteCredential", () => {
  const jwt: PlaybackPolicy = { type: "jwt" };
  const webhook = { type: "webhook", webhookId: "w" } as PlaybackPolicy;
  const cases: [string, PlaybackPolicy | null, Record<string, unknown>, Record<string, string>][] = [
    ["a public stream: none", null, { jwt: "j", accessKey: "k" }, {}],
    ["a jwt stream: the query's jwt", jwt, { jwt: "j", accessKey: "k", media: "m" }, { jwt: "j" }],
    ["a jwt stream: the header's, which an image request lacks", jwt, { jwtHeader: "h", jwt: "j" }, { jwt: "h" }],
    ["a webhook stream: the access key", webhook, { jwt: "j", accessKey: "k" }, { accessKey: "k" }],
    ["a media token alone: as the media query names it", jwt, { media: "tok" }, { m: "tok" }],
    ["not a string: none", jwt, { jwt: ["a", "b"] }, {}],
  ];
  test.each(cases)("%s", (_n, policy, c, want) => expect(spriteCredential(policy, c)).toEqual(want));
});

describe("spriteUrl", () => {
  test("the build's id, then the credential, encoded", () => {
    expect(spriteUrl("ab12", {})).toBe("storyboard.jpg?v=ab12");
    expect(spriteUrl("ab12", { jwt: "a.b+c/d=&x=1" })).toBe("storyboard.jpg?v=ab12&jwt=a.b%2Bc%2Fd%3D%26x%3D1");
  });
});
