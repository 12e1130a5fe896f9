import { exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { addUriQuery } from "../../../src/hls";
import { mintToken, PlaybackGate, QuestionBudget, readToken, verifyPlaybackJwt, type KnownKey, type PlaybackSubject } from "../../../src/playback";

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

  it("a token bound to a credential reads only with that credential", () => {
    const bound = mintToken(KEY, "s", PID, { viewerId: VIEWER, expires: 1000 }, "key-1");
    expect(readToken(KEY, "s", PID, bound, "key-1")).toEqual({ viewerId: VIEWER, expires: 1000 });
    expect(readToken(KEY, "s", PID, bound, "key-2")).toBeUndefined();
    expect(readToken(KEY, "s", PID, bound)).toBeUndefined();
    expect(readToken(KEY, "s", PID, token, "key-1")).toBeUndefined();
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
    viewers: { seen: (_p, v) => void seen.push(v), watching: () => false },
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

  it("a Livepeer-Jwt header is checked on every request and carried to the variants (Livepeer's player sends it to the master only); a disabled key stops the next reload", async () => {
    const t = await token(600);
    const opened = ok(await gate.open(jwt, { jwtHeader: t }));
    expect(param(opened.playlist, "jwt")).toBe(t);
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

describe("PlaybackGate under load", () => {
  const ok = <T>(v: T) => {
    if (!(v as { ok: boolean }).ok) throw new Error(`refused: ${JSON.stringify(v)}`);
    return v;
  };
  const hook: PlaybackSubject = { playbackId: PID, userId: "u", policy: { type: "webhook", webhookId: "w", refreshInterval: 60 } };
  const jwtStream: PlaybackSubject = { playbackId: PID, userId: "u", policy: { type: "jwt" } };
  const param = (query: string | undefined, name: string) => new URLSearchParams(query).get(name) ?? undefined;

  /** A gate whose webhook answers when the test says (`answer`), with its clock, viewers and budget in the test's hands. */
  function setup(options: { sessionSeconds?: number; bounds?: ConstructorParameters<typeof QuestionBudget>[0] } = {}) {
    const state = { clock: 1_000_000_000_000, asked: [] as string[], seen: [] as string[], watching: new Set<string>(), answers: new Map<string, (v: boolean | undefined) => void>() };
    const questions = new QuestionBudget(options.bounds ?? { perPlaybackInFlight: 2, perPlaybackRate: 1, nodeInFlight: 10, nodeRate: 100 }, state.clock);
    const gate = new PlaybackGate({
      key: KEY,
      findKey: async () => undefined,
      askWebhook: (_s, accessKey) =>
        new Promise((resolve) => {
          state.asked.push(accessKey);
          state.answers.set(accessKey, resolve);
        }),
      viewers: { seen: (_p, v) => void state.seen.push(v), watching: (_p, v) => state.watching.has(v) },
      tokenSeconds: 30,
      ...(options.sessionSeconds !== undefined ? { sessionSeconds: options.sessionSeconds } : {}),
      questions,
      now: () => state.clock,
    });
    /** Lets the webhook say `v` to `key` and the gate take it in. */
    const say = async (key: string, v: boolean | undefined) => {
      state.answers.get(key)!(v);
      state.answers.delete(key);
      await new Promise((r) => setImmediate(r));
    };
    return { state, gate, questions, say };
  }

  it("new keys past the budget get 503 with Retry-After, never 401, and cost no question", async () => {
    const { state, gate, say } = setup();
    const first = [gate.open(hook, { accessKey: "k1" }), gate.open(hook, { accessKey: "k2" })];
    // Two in flight for this playback id: the third is told to come back.
    expect(await gate.open(hook, { accessKey: "k3" })).toEqual({ ok: false, status: 503, error: expect.stringMatching(/retry in 1 s/), retryAfterSeconds: 1 });
    expect(state.asked).toEqual(["k1", "k2"]);
    await say("k1", true);
    await say("k2", false);
    expect(await first[0]).toMatchObject({ ok: true });
    expect(await first[1]).toMatchObject({ ok: false, status: 401 });
    // The burst of 2 is spent (1 a second): the next new key waits for the bucket.
    expect(await gate.open(hook, { accessKey: "k3" })).toMatchObject({ ok: false, status: 503, retryAfterSeconds: 1 });
    state.clock += 1000;
    const third = gate.open(hook, { accessKey: "k3" });
    expect(state.asked).toEqual(["k1", "k2", "k3"]);
    await say("k3", true);
    expect(await third).toMatchObject({ ok: true });
  });

  it("a viewer let in goes on while the budget is spent: a fresh verdict, then its stale one while it is asked again", async () => {
    const { state, gate, say } = setup();
    const opened = gate.open(hook, { accessKey: "viewer" });
    await say("viewer", true);
    const session = param(((await opened) as { playlist: string }).playlist, "s");
    // A flood spends the budget.
    void gate.open(hook, { accessKey: "flood-1" });
    expect(await gate.open(hook, { accessKey: "flood-2" })).toMatchObject({ status: 503 });
    expect(await gate.playlist(hook, { accessKey: "viewer", session })).toMatchObject({ ok: true });
    // Past its refresh interval: still let in at once, and asked again outside the budget.
    state.clock += 61_000;
    expect(await gate.playlist(hook, { accessKey: "viewer", session })).toMatchObject({ ok: true });
    expect(state.asked).toEqual(["viewer", "flood-1", "viewer"]);
    // The webhook changed its mind: the next reload is refused.
    await say("viewer", false);
    expect(await gate.playlist(hook, { accessKey: "viewer", session })).toMatchObject({ ok: false, status: 401 });
  });

  it("a session token bound to the key proves a viewer let in: asked outside the budget after a restart; with another key it names nobody", async () => {
    const { state, gate, say } = setup({ bounds: { perPlaybackInFlight: 1, perPlaybackRate: 1, nodeInFlight: 1, nodeRate: 1 } });
    const session = mintToken(KEY, "s", PID, { viewerId: VIEWER, expires: state.clock / 1000 + 3600 }, "viewer");
    void gate.open(hook, { accessKey: "flood-1" });
    expect(await gate.open(hook, { accessKey: "flood-2" })).toMatchObject({ status: 503 });
    const known = gate.playlist(hook, { accessKey: "viewer", session });
    expect(state.asked).toEqual(["flood-1", "viewer"]);
    await say("viewer", true);
    expect(await known).toMatchObject({ ok: true });
    expect(state.seen).toEqual([VIEWER]);
    // The same token shown with another key is no proof: a new key, within the budget.
    expect(await gate.playlist(hook, { accessKey: "flood-3", session })).toMatchObject({ status: 503 });
  });

  it("a webhook that does not answer is a 503, not remembered; a viewer let in rides it out", async () => {
    const { state, gate, say } = setup();
    const first = gate.open(hook, { accessKey: "k" });
    await say("k", undefined);
    expect(await first).toMatchObject({ ok: false, status: 503, retryAfterSeconds: 2 });
    const second = gate.open(hook, { accessKey: "k" });
    await say("k", true);
    expect(await second).toMatchObject({ ok: true });
    state.clock += 61_000;
    expect(await gate.open(hook, { accessKey: "k" })).toMatchObject({ ok: true });
    await say("k", undefined);
    expect(await gate.open(hook, { accessKey: "k" })).toMatchObject({ ok: true });
    expect(state.asked).toEqual(["k", "k", "k", "k"]);
  });

  it("counts a gated stream's viewer only once let in", async () => {
    const { state, gate } = setup();
    const session = mintToken(KEY, "s", PID, { viewerId: VIEWER, expires: state.clock / 1000 + 3600 });
    expect(await gate.playlist(jwtStream, { session })).toMatchObject({ ok: false, status: 401 });
    expect(await gate.playlist(jwtStream, { session, jwt: "not.a.jwt" })).toMatchObject({ ok: false, status: 401 });
    expect(state.seen).toEqual([]);
  });

  it("a session token expires: past it, it names nobody unless its viewer is still watching", async () => {
    const { state, gate } = setup({ sessionSeconds: 10 });
    const pub: PlaybackSubject = { playbackId: PID, userId: "u", policy: null };
    const session = param(((await gate.open(pub, {})) as { playlist: string }).playlist, "s")!;
    const { viewerId, expires } = readToken(KEY, "s", PID, session)!;
    // Rounded up to a step of the lifetime: between 10 and 20 s on.
    expect(expires * 1000 - state.clock).toBeGreaterThanOrEqual(10_000);
    expect(expires * 1000 - state.clock).toBeLessThanOrEqual(20_000);
    await gate.playlist(pub, { session });
    expect(state.seen).toEqual([viewerId]);
    state.clock = expires * 1000 + 1;
    await gate.playlist(pub, { session });
    expect(state.seen).toEqual([viewerId]);
    // A master playlist given the expired token names a new viewer.
    expect(readToken(KEY, "s", PID, param(((await gate.open(pub, { session })) as { playlist: string }).playlist, "s"))!.viewerId).not.toBe(viewerId);
    // A player that never stopped reloading keeps its viewer.
    state.watching.add(viewerId);
    await gate.playlist(pub, { session });
    expect(state.seen).toEqual([viewerId, viewerId]);
    expect(readToken(KEY, "s", PID, param(((await gate.open(pub, { session })) as { playlist: string }).playlist, "s"))!.viewerId).toBe(viewerId);
  });

  it("a full verdict cache forgets refusals before the viewers let in", async () => {
    let asked = 0;
    const gate = new PlaybackGate({
      key: KEY,
      findKey: async () => undefined,
      askWebhook: async (_s, accessKey) => (asked++, accessKey.startsWith("good-")),
      viewers: { seen: () => {}, watching: () => false },
      tokenSeconds: 30,
    });
    for (let i = 0; i < 100; i++) ok(await gate.open(hook, { accessKey: `good-${i}` }));
    // 12,000 made-up keys (no budget here): more than the cache holds.
    for (let i = 0; i < 12_000; i += 500) await Promise.all(Array.from({ length: 500 }, (_, j) => gate.open(hook, { accessKey: `flood-${i + j}` })));
    asked = 0;
    for (let i = 0; i < 100; i++) ok(await gate.open(hook, { accessKey: `good-${i}` }));
    expect(asked).toBe(0);
  });
});

