import { exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { addUriQuery } from "../../../src/hls";
import { mintToken, PlaybackGate, readToken, verifyPlaybackJwt, type KnownKey, type PlaybackSubject } from "../../../src/playback";

// The pure parts of playback access: tokens, playlist URI rewriting, JWT checks and the gate's
// decisions, with the clock and the viewer log in the test's hands.

const KEY = Buffer.alloc(32, 7);
const OTHER_KEY = Buffer.alloc(32, 8);
const PID = "abcdefgh12345678";
const VIEWER = "AAAAAAAAAAAAAAAA";

describe("viewer tokens", () => {
  const token = mintToken(KEY, "s", PID, { viewerId: VIEWER, expires: 1000 });
  it.each([
    ["the token as minted", KEY, "s", PID, token, { viewerId: VIEWER, expires: 1000 }],
    ["another kind", KEY, "m", PID, token, undefined],
    ["another playback id", KEY, "s", "abcdefgh12345679", token, undefined],
    ["another server's key", OTHER_KEY, "s", PID, token, undefined],
    ["a changed expiry", KEY, "s", PID, token.replace(".1000.", ".9000."), undefined],
    ["a changed viewer", KEY, "s", PID, `B${token.slice(1)}`, undefined],
    ["not a string", KEY, "s", PID, ["a", "b"], undefined],
    ["garbage", KEY, "s", PID, "x.y.z", undefined],
  ] as const)("%s", (_name, key, kind, pid, value, expected) => {
    expect(readToken(key, kind, pid, value)).toEqual(expected);
  });
});

describe("addUriQuery", () => {
  const master = ["#EXTM3U", '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="x",URI="2/index.m3u8"', "#EXT-X-STREAM-INF:BANDWIDTH=1", "0/index.m3u8", ""].join("\n");
  const media = [
    "#EXTM3U",
    '#EXT-X-MAP:URI="init.mp4"',
    '#EXT-X-PART:DURATION=0.2,URI="s1_p0.m4s"',
    "#EXTINF:1.0,",
    "s1.m4s",
    '#EXT-X-PRELOAD-HINT:TYPE=PART,URI="s2_p0.m4s"',
    '#EXT-X-RENDITION-REPORT:URI="../1/index.m3u8",LAST-MSN=1',
    "",
  ].join("\n");
  const tag = (role: string) => (role === "media" ? "m=M" : "s=S");
  it.each([
    ["master: variant lines and EXT-X-MEDIA are playlists", master, ["#EXTM3U", '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="x",URI="2/index.m3u8?s=S"', "#EXT-X-STREAM-INF:BANDWIDTH=1", "0/index.m3u8?s=S", ""]],
    [
      "media: segments, parts, map and hint are media; rendition reports playlists",
      media,
      ["#EXTM3U", '#EXT-X-MAP:URI="init.mp4?m=M"', '#EXT-X-PART:DURATION=0.2,URI="s1_p0.m4s?m=M"', "#EXTINF:1.0,", "s1.m4s?m=M", '#EXT-X-PRELOAD-HINT:TYPE=PART,URI="s2_p0.m4s?m=M"', '#EXT-X-RENDITION-REPORT:URI="../1/index.m3u8?s=S",LAST-MSN=1', ""],
    ],
    ["a URI with a query gets &", "#EXTM3U\nseg.ts?a=1\n", ["#EXTM3U", "seg.ts?a=1&m=M", ""]],
  ])("%s", (_name, playlist, expected) => {
    expect(addUriQuery(playlist, tag).split("\n")).toEqual(expected);
  });
  it("leaves URIs alone when asked to", () => {
    expect(addUriQuery(media, (role) => (role === "media" ? undefined : "s=S"))).toContain('URI="init.mp4"');
  });
});

async function keyPair() {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const pem = await exportSPKI(publicKey);
  return { privateKey, pem, pub: Buffer.from(pem).toString("base64") };
}

const NOW = new Date("2026-11-26T12:00:00Z");
const nowSec = NOW.getTime() / 1000;

describe("verifyPlaybackJwt", () => {
  let owner: Awaited<ReturnType<typeof keyPair>>;
  let stranger: Awaited<ReturnType<typeof keyPair>>;
  const keys = new Map<string, KnownKey>();
  const findKey = async (userId: string, pub: string) => (userId === "owner" ? keys.get(pub) : undefined);
  const sign = (k: { privateKey: CryptoKey; pub: string }, claims: Record<string, unknown>, alg = "ES256") =>
    new SignJWT({ pub: k.pub, ...claims }).setProtectedHeader({ alg }).sign(k.privateKey);

  beforeAll(async () => {
    owner = await keyPair();
    stranger = await keyPair();
    keys.set(owner.pub, { id: "k1", publicKey: owner.pem, disabled: false });
  });

  it.each([
    ["a good token", () => sign(owner, { sub: PID, exp: nowSec + 60 }), { ok: true, keyId: "k1", expires: nowSec + 60 }],
    ["expired", () => sign(owner, { sub: PID, exp: nowSec - 60 }), { ok: false, reason: "the JWT has expired" }],
    ["expired within the clock skew", () => sign(owner, { sub: PID, exp: nowSec - 2 }), { ok: true, keyId: "k1", expires: nowSec - 2 }],
    ["without exp", () => sign(owner, { sub: PID }), { ok: false, reason: "the JWT's exp claim is not valid" }],
    ["for another playback id", () => sign(owner, { sub: "zzzzzzzzzzzzzzzz", exp: nowSec + 60 }), { ok: false, reason: "the JWT is for another playback id (sub)" }],
    ["a key of another user", () => sign(stranger, { sub: PID, exp: nowSec + 60 }), { ok: false, reason: "the JWT's signing key is not one of the stream owner's" }],
    ["signed by another key than its pub", () => sign({ privateKey: stranger.privateKey, pub: owner.pub }, { sub: PID, exp: nowSec + 60 }), { ok: false, reason: "the JWT's signature does not verify" }],
    ["not a JWT", async () => "a.b.c", { ok: false, reason: "the JWT is malformed" }],
  ])("%s", async (_name, token, expected) => {
    expect(await verifyPlaybackJwt(await token(), PID, "owner", findKey, NOW)).toEqual(expected);
  });

  it("refuses a disabled key", async () => {
    keys.set(stranger.pub, { id: "k2", publicKey: stranger.pem, disabled: true });
    expect(await verifyPlaybackJwt(await sign(stranger, { sub: PID, exp: nowSec + 60 }), PID, "owner", findKey, NOW)).toEqual({ ok: false, reason: "the JWT's signing key is disabled" });
    keys.delete(stranger.pub);
  });
});

describe("PlaybackGate", () => {
  let clock = 30_000 * 33_333_333; // the start of a 30 s period
  const seen: string[] = [];
  const webhookAnswers: string[] = [];
  let owner: Awaited<ReturnType<typeof keyPair>>;
  let disabled = false;
  const used: string[] = [];
  const gate = new PlaybackGate({
    key: KEY,
    findKey: async (userId, pub) => (userId === "u" && pub === owner.pub ? { id: "k1", publicKey: owner.pem, disabled } : undefined),
    askWebhook: async (_s, accessKey) => {
      webhookAnswers.push(accessKey);
      await new Promise((r) => setTimeout(r, 10));
      return accessKey === "good";
    },
    viewers: { seen: (_p, v) => void seen.push(v) },
    tokenSeconds: 30,
    now: () => clock,
    keyUsed: (id) => void used.push(id),
  });
  const pub: PlaybackSubject = { playbackId: PID, userId: "u", policy: { type: "public" } };
  const jwt: PlaybackSubject = { playbackId: PID, userId: "u", policy: { type: "jwt" } };
  const hook: PlaybackSubject = { playbackId: PID, userId: "u", policy: { type: "webhook", webhookId: "w", refreshInterval: 60 } };
  const ok = <T>(v: T) => {
    if (!(v as { ok: boolean }).ok) throw new Error(`refused: ${JSON.stringify(v)}`);
    return v as Extract<T, { ok: true }>;
  };
  const param = (query: string | undefined, name: string) => new URLSearchParams(query).get(name) ?? undefined;
  const token = (expiresInSeconds: number) =>
    new SignJWT({ pub: owner.pub, sub: PID, exp: clock / 1000 + expiresInSeconds }).setProtectedHeader({ alg: "ES256" }).sign(owner.privateKey);

  beforeAll(async () => {
    owner = await keyPair();
  });

  it("a public stream lets everyone in and counts the viewers its sessions name", async () => {
    const opened = ok(await gate.open(pub, {}));
    const session = param(opened.playlist, "s");
    expect(await gate.playlist(pub, { session })).toEqual({ ok: true });
    expect(seen).toEqual([readToken(KEY, "s", PID, session)!.viewerId]);
    // A forged session names nobody.
    await gate.playlist(pub, { session: `${VIEWER}.0.AAAAAAAAAAAAAAAAAAAAAA` });
    expect(seen).toHaveLength(1);
    expect(await gate.media(pub, {})).toEqual({ ok: true });
  });

  it("a jwt stream refuses a player without a JWT, at every level", async () => {
    expect(await gate.open(jwt, {})).toMatchObject({ ok: false, status: 401 });
    expect(await gate.playlist(jwt, {})).toMatchObject({ ok: false, status: 401 });
    expect(await gate.media(jwt, {})).toMatchObject({ ok: false, status: 401 });
    expect(await gate.open(jwt, { jwt: "not.a.jwt" })).toEqual({ ok: false, status: 401, error: "the JWT is malformed" });
  });

  it("carries a query JWT into the playlists, checks it on every playlist, and names media with period tokens", async () => {
    const t = await token(120);
    const opened = ok(await gate.open(jwt, { jwt: t }));
    expect(used).toEqual(["k1"]);
    expect(param(opened.playlist, "jwt")).toBe(t);
    const session = param(opened.playlist, "s");
    const first = ok(await gate.playlist(jwt, { jwt: t, session }));
    expect(param(first.playlist, "s")).toBe(session);
    const media = param(first.media, "m");
    // The same media token for every reload within a period: the playlist's URIs do not change.
    clock += 29_000;
    expect(param(ok(await gate.playlist(jwt, { jwt: t, session })).media, "m")).toBe(media);
    expect(await gate.media(jwt, { media })).toEqual({ ok: true });
    // Valid to the end of the next period, refused after it (a copied segment URL).
    clock += 30_000;
    expect(await gate.media(jwt, { media })).toEqual({ ok: true });
    clock += 2_000;
    expect(await gate.media(jwt, { media })).toEqual({ ok: false, status: 401, error: "the media token has expired: reload the playlist" });
    // Past the JWT's exp (and the skew, and the verdict cache): the next reload ends the session.
    clock += 90_000;
    expect(await gate.playlist(jwt, { jwt: t, session })).toEqual({ ok: false, status: 401, error: "the JWT has expired" });
  });

  it("a Livepeer-Jwt header is checked on every request and never carried; a disabled key stops the next reload", async () => {
    const t = await token(600);
    const opened = ok(await gate.open(jwt, { jwtHeader: t }));
    expect(param(opened.playlist, "jwt")).toBeUndefined();
    expect(await gate.media(jwt, { jwtHeader: t })).toEqual({ ok: true });
    disabled = true;
    clock += 6_000; // the verdict cache
    expect(await gate.playlist(jwt, { jwtHeader: t })).toEqual({ ok: false, status: 401, error: "the JWT's signing key is disabled" });
    disabled = false;
  });

  it("a webhook stream asks once per access key within the refresh interval, parallel requests included", async () => {
    webhookAnswers.length = 0;
    expect(await gate.open(hook, {})).toMatchObject({ ok: false, status: 401 });
    expect(await gate.open(hook, { accessKey: "bad" })).toMatchObject({ ok: false, error: "the stream owner's webhook did not admit this access key" });
    const answers = await Promise.all([0, 1, 2, 3].map(() => gate.open(hook, { accessKey: "good" })));
    expect(answers.every((a) => a.ok)).toBe(true);
    expect(param((answers[0] as { playlist?: string }).playlist, "accessKey")).toBe("good");
    ok(await gate.media(hook, { accessKey: "good" }));
    expect(webhookAnswers).toEqual(["bad", "good"]);
    clock += 61_000;
    ok(await gate.playlist(hook, { accessKey: "good" }));
    expect(webhookAnswers).toEqual(["bad", "good", "good"]);
  });
});
