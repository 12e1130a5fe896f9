import fc from "fast-check";
import { apiRoutes } from "../../src/api";
import { createLogger } from "../../src/log";
import type { Route } from "../../src/api/route";
import { apiClient, startTestServer, type Api, type TestServer } from "../helpers/server";

// Issue 8, hostile input: random bodies, query strings, path ids and authorization headers
// against every endpoint of the route table, on a real server with two users. A is the
// attacker; B's objects must come out of the run unchanged and never show up in A's answers.
//
// Reproduce a failure: fast-check prints `seed` and `path`; rerun with FC_SEED=<seed>.
const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
const NUM_RUNS = 200;
fc.configureGlobal({ numRuns: NUM_RUNS, seed, interruptAfterTimeLimit: 40_000 });

let t: TestServer;
let asA: Api;
let asB: Api;
let routes: Route[];
let keyA: string;
const a = { streamId: "", playbackId: "", targetId: "", webhookId: "" };
const b = { streamId: "", streamKey: "", playbackId: "", targetId: "", targetUrl: "", webhookId: "", webhookUrl: "", sharedSecret: "" };
let bBefore: string[];

/** What B sees of its own objects: any change made by A's requests shows here. */
async function bSnapshot(): Promise<string[]> {
  const paths = [`/stream/${b.streamId}`, `/multistream/target/${b.targetId}`, `/webhook/${b.webhookId}`, "/stream", "/multistream/target", "/webhook", "/session"];
  return Promise.all(
    paths.map(async (p) => {
      const res = await asB("GET", p);
      return `${p} ${res.status} ${res.text}`;
    }),
  );
}

beforeAll(async () => {
  // The rate limit (its own tests) would turn most of these runs into 429s.
  t = await startTestServer({ API_RATE_LIMIT: "0" });
  keyA = t.key;
  asA = apiClient(t.apiUrl, keyA);
  asB = apiClient(t.apiUrl, await t.keyFor("bob"));
  // The route table itself: every endpoint the API serves, as the server mounts them.
  routes = apiRoutes({ store: t.server.store, log: createLogger("silent"), publicUrl: () => t.server.publicUrl, signRecording: () => "", live: t.server.sessions });

  const bs = await asB("POST", "/stream", { name: "bob's stream", record: true });
  Object.assign(b, { streamId: bs.body.id, streamKey: bs.body.streamKey, playbackId: bs.body.playbackId });
  b.targetUrl = "rtmp://bob-target.example/live/bob-target-secret-9f3c";
  const bt = await asB("POST", "/multistream/target", { url: b.targetUrl, name: "bob's target" });
  b.targetId = bt.body.id;
  expect((await asB("PATCH", `/stream/${b.streamId}`, { multistream: { targets: [{ id: b.targetId, profile: "source" }] } })).status).toBe(204);
  b.webhookUrl = "http://bob-hooks.example/hook-7d1e";
  b.sharedSecret = "bob-shared-secret-51aa";
  const bw = await asB("POST", "/webhook", { url: b.webhookUrl, sharedSecret: b.sharedSecret, streamId: b.streamId });
  b.webhookId = bw.body.id;

  const as = await asA("POST", "/stream", { name: "alice's stream" });
  Object.assign(a, { streamId: as.body.id, playbackId: as.body.playbackId });
  a.targetId = (await asA("POST", "/multistream/target", { url: "rtmp://alice.example/live/x" })).body.id;
  a.webhookId = (await asA("POST", "/webhook", { url: "http://alice.example/hook" })).body.id;
  for (const id of [...Object.values(a), b.streamId, b.targetId, b.webhookId]) expect(id).toEqual(expect.any(String));
  bBefore = await bSnapshot();
});
afterAll(() => t.stop());

// --- generators ---

const HOSTILE_STRINGS = [
  "'; DROP TABLE streams; --",
  "\" OR 1=1 --",
  "%' OR '1'='1",
  "../../etc/passwd",
  "..\\..\\windows\\win.ini",
  "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
  "..%2f..%2fonair.db",
  "\u0000",
  "a\u0000b",
  "\u202e\u{1F600}\uFEFF",
  "\ud800",
  "__proto__",
  "constructor",
  "${jndi:ldap://x}",
  "<script>alert(1)</script>",
  "rtmp://x/live/../../",
  "http://127.0.0.1:1/",
  "NaN",
  "-1",
  "1e309",
];

/** Up to ~100 KB: a short random piece repeated. */
const hugeString = fc
  .tuple(fc.string({ minLength: 1, maxLength: 8, unit: "binary" }), fc.integer({ min: 1_000, max: 100_000 }))
  .map(([s, n]) => s.repeat(Math.ceil(n / s.length)).slice(0, n));

/** Ids: A's own, B's (which A must not reach), random, traversal and encoding tricks. */
const anyId = () =>
  fc.oneof(
    fc.constantFrom(a.streamId, a.targetId, a.webhookId, a.playbackId),
    fc.constantFrom(b.streamId, b.targetId, b.webhookId, b.playbackId),
    fc.constantFrom(...HOSTILE_STRINGS),
    fc.string({ unit: "grapheme", maxLength: 40 }),
    fc.uuid(),
  );

const hostileString = () => fc.oneof(fc.constantFrom(...HOSTILE_STRINGS), fc.string({ unit: "binary", maxLength: 200 }), hugeString, anyId());

/** A JSON value nested `depth` levels deep, as text (JSON.stringify would recurse). */
const deepJson = fc
  .tuple(fc.integer({ min: 100, max: 20_000 }), fc.constantFrom("[", '{"a":'))
  .map(([depth, open]) => open.repeat(depth) + "1" + (open === "[" ? "]" : "}").repeat(depth));

const FIELD_NAMES = [
  "name", "profiles", "record", "suspended", "multistream", "playbackPolicy", "pull",
  "url", "disabled", "events", "sharedSecret", "streamId", "__proto__", "constructor",
];

/** Values shaped like what the schemas expect, filled with hostile content. */
const fieldValue = (): fc.Arbitrary<unknown> =>
  fc.oneof(
    hostileString(),
    fc.anything({ maxDepth: 3 }),
    fc.constantFrom(true, false, null, 0, -1, 1e308, Number.MAX_SAFE_INTEGER + 2),
    fc.array(fc.record({ name: hostileString(), bitrate: fc.integer(), fps: fc.integer(), width: fc.integer(), height: fc.integer() }), { maxLength: 12 }),
    fc.record({ targets: fc.array(fc.record({ id: anyId(), profile: fc.oneof(fc.constant("source"), hostileString()) }, { requiredKeys: [] }), { maxLength: 3 }) }),
    fc.record({ type: fc.constantFrom("public", "jwt", "webhook", "x"), webhookContext: fc.dictionary(fc.string(), fc.anything()) }, { requiredKeys: [] }),
    fc.array(fc.oneof(fc.constantFrom("stream.started", "stream.idle"), hostileString()), { maxLength: 20 }),
  );

/** Request bodies, as the text sent with `content-type: application/json`. */
const bodyText = fc.oneof(
  fc.dictionary(fc.constantFrom(...FIELD_NAMES), fieldValue(), { maxKeys: 6 }).map((o) => JSON.stringify(o)),
  fc.anything().map((v) => JSON.stringify(v) ?? "null"),
  fc.json(),
  deepJson,
  deepJson.map((d) => `{"name":"deep","pull":${d},"playbackPolicy":{"type":"public","webhookContext":{"a":${d}}}}`),
  hugeString.map((s) => JSON.stringify({ name: s, url: s, sharedSecret: s })),
  fc.string({ unit: "binary", maxLength: 300 }), // mostly not JSON at all
);

const QUERY_KEYS = ["limit", "cursor", "filters", "streamsonly", "record", "a[b]", "limit[]", "cursor[a]", "__proto__", "constructor[prototype][x]"];

const queryString = fc
  .array(
    fc.tuple(
      fc.oneof(fc.constantFrom(...QUERY_KEYS), fc.string({ maxLength: 10 })),
      fc.oneof(
        fc.constantFrom(...HOSTILE_STRINGS),
        fc.constantFrom("1", "0", "true", "-5", "1e3", "99999999999999999999", "", "czE=", "czk5OTk5OTk5OTk5OTk5OTk5OQ"),
        fc.string({ maxLength: 50 }),
        fc.json({ maxDepth: 3 }),
        // Node's HTTP parser refuses request heads over 16 KiB with a bare 431 before our
        // code runs (reported in issue 8), so query values stay below that.
        fc.integer({ min: 1_000, max: 2_000 }).map((n) => "x".repeat(n)),
      ),
      fc.boolean(), // raw (unencoded `%`, `&`, `[`…) or encoded
    ),
    { maxLength: 6 },
  )
  .map((pairs) =>
    pairs
      .map(([k, v, raw]) => (raw ? `${k}=${v.replace(/[#\s]/g, "_")}` : `${encodeSafe(k)}=${encodeSafe(v)}`))
      .join("&"),
  );

/** A path segment: encoded ids, or raw tricks the router must survive (`%ZZ`, `..%2f`). */
const pathSegment = () =>
  fc.oneof(
    anyId().map((id) => encodeSafe(id) || "x"),
    fc.constantFrom("%2e%2e%2f%2e%2e%2fetc%2fpasswd", "..%2f..%2f", "%ZZ", "%E0%A4%A", "%00", "%252e%252e", "%c0%ae%c0%ae", ".%2e", "%u002e"),
  );

const authHeader = fc.oneof(
  fc.constant<Record<string, string>>({ authorization: "" }), // replaced below: A's key
  fc.constant<Record<string, string>>({}),
  fc.constantFrom("Bearer", "Bearer ", "Basic abc", "bearer  x  y", `Bearer ${"k".repeat(8000)}`, "Bearer ' OR 1=1 --").map((h) => ({ authorization: h })),
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 60 }).map((s) => ({ authorization: `Bearer ${s}` })),
);

/** `{method, path}` only: counterexamples stay readable. */
const routeArb = () => fc.constantFrom(...routes.map((r) => ({ method: r.method, path: r.path })));

// --- the properties checked after every request ---

interface Sent {
  method: string;
  url: string;
  body?: string;
  headers: Record<string, string>;
}

async function send(req: Sent) {
  const res = await fetch(t.apiUrl + req.url, {
    method: req.method,
    headers: { ...(req.body !== undefined ? { "content-type": "application/json" } : {}), ...req.headers },
    // fetch sends no body with GET; the router reads none anyway.
    body: req.method === "GET" ? undefined : req.body,
  });
  return { status: res.status, text: await res.text() };
}

function describeRequest(req: Sent): string {
  const body = req.body === undefined ? "" : ` body(${req.body.length})=${req.body.slice(0, 300)}`;
  return `${req.method} ${req.url.slice(0, 300)} auth=${JSON.stringify(req.headers.authorization?.slice(0, 40))}${body}`;
}

/** No 5xx; a 4xx is `{"errors": [non-empty strings]}`; nothing secret of B's in the answer. */
function checkAnswer(req: Sent, res: { status: number; text: string }): void {
  const where = `${describeRequest(req)} → ${res.status} ${res.text.slice(0, 300)}`;
  // 501 is the designed answer for a feature onair lacks (src/api/errors.ts), not a failure.
  if (res.status >= 500 && res.status !== 501) throw new Error(`5xx: ${where}`);
  if (res.status >= 400) {
    let body: unknown;
    try {
      body = JSON.parse(res.text);
    } catch {
      throw new Error(`4xx body is not JSON: ${where}`);
    }
    const errors = (body as { errors?: unknown }).errors;
    const ok =
      Object.keys(body as object).length === 1 &&
      Array.isArray(errors) &&
      errors.length > 0 &&
      errors.every((e) => typeof e === "string" && e.length > 0);
    if (!ok) throw new Error(`4xx body is not {"errors": [non-empty strings]}: ${where}`);
  }
  // B's secrets never reach A; B's ids only as an echo of what A sent (a 404 names the id).
  const sent = `${decodeURIComponentSafe(req.url)} ${req.url} ${req.body ?? ""}`;
  for (const secret of [b.streamKey, b.targetUrl, b.webhookUrl, b.sharedSecret]) {
    if (res.text.includes(secret)) throw new Error(`B's secret ${secret} in A's answer: ${where}`);
  }
  for (const id of [b.streamId, b.targetId, b.webhookId, b.playbackId]) {
    if (res.text.includes(id) && !sent.includes(id)) throw new Error(`B's id ${id} in A's answer unasked: ${where}`);
  }
}

/** encodeURIComponent, except a lone surrogate becomes its raw UTF-8 bytes: a bad escape. */
function encodeSafe(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return s.replace(/[\ud800-\udfff]/g, "%ED%A0%80").replace(/[^%\w.~-]/g, (c) => encodeURIComponent(c));
  }
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** `/stream/:id/record` with the given segments for the params. */
function fillPath(path: string, segments: string[]): string {
  let i = 0;
  return path.replace(/:[A-Za-z]+/g, () => segments[i++ % segments.length]!);
}

async function expectBUnchangedAndServerUp(): Promise<void> {
  expect(await bSnapshot()).toEqual(bBefore);
  const health = await fetch(`http://127.0.0.1:${t.server.port}/healthz`);
  expect(health.status).toBe(200);
  expect((await asA("GET", "/stream")).status).toBe(200);
}

const withAuth = (h: Record<string, string>) => (h.authorization === "" ? { authorization: `Bearer ${keyA}` } : h);

describe("hostile input never yields a 5xx, a malformed error or another user's data", () => {
  it("random bodies on every endpoint, as user A", async () => {
    await fc.assert(
      fc.asyncProperty(routeArb(), fc.array(pathSegment(), { minLength: 2, maxLength: 2 }), bodyText, async (r, segs, body) => {
        const req: Sent = { method: r.method.toUpperCase(), url: fillPath(r.path, segs), body, headers: withAuth({ authorization: "" }) };
        checkAnswer(req, await send(req));
      }),
    );
    await expectBUnchangedAndServerUp();
  });

  it("random query strings on every endpoint", async () => {
    await fc.assert(
      fc.asyncProperty(routeArb(), fc.array(pathSegment(), { minLength: 2, maxLength: 2 }), queryString, authHeader, async (r, segs, query, auth) => {
        const req: Sent = { method: r.method.toUpperCase(), url: `${fillPath(r.path, segs)}?${query}`, headers: withAuth(auth) };
        checkAnswer(req, await send(req));
      }),
    );
    await expectBUnchangedAndServerUp();
  });

  it("random path ids (A's, B's, traversal, bad escapes) with and without valid auth", async () => {
    await fc.assert(
      fc.asyncProperty(
        routeArb(),
        fc.array(pathSegment(), { minLength: 2, maxLength: 2 }),
        authHeader,
        fc.option(bodyText, { nil: undefined }),
        async (r, segs, auth, body) => {
          const req: Sent = { method: r.method.toUpperCase(), url: fillPath(r.path, segs), body, headers: withAuth(auth) };
          checkAnswer(req, await send(req));
        },
      ),
    );
    await expectBUnchangedAndServerUp();
  });

  it("B's objects aimed at directly by A's every route: 404s, B unchanged", async () => {
    // Deterministic complement to the random runs: every route with every one of B's ids.
    for (const r of routes) {
      for (const id of [b.streamId, b.targetId, b.webhookId]) {
        const body = JSON.stringify({ name: "taken", record: false, suspended: true, url: "http://a.example/x", disabled: true, streamId: id });
        const req: Sent = { method: r.method.toUpperCase(), url: fillPath(r.path, [id]), body, headers: { authorization: `Bearer ${keyA}` } };
        const res = await send(req);
        checkAnswer(req, res);
        if (r.path.includes(":")) expect([400, 404, 422]).toContain(res.status);
      }
    }
    // A's own objects may not point at B's either.
    const refs = [
      ["POST", "/stream", { name: "x", multistream: { targets: [{ id: b.targetId, profile: "source" }] } }],
      ["PATCH", `/stream/${a.streamId}`, { multistream: { targets: [{ id: b.targetId, profile: "source" }] } }],
      ["POST", "/webhook", { url: "http://a.example/x", streamId: b.streamId }],
      ["PUT", `/webhook/${a.webhookId}`, { url: "http://a.example/x", streamId: b.streamId }],
    ] as const;
    for (const [method, path, body] of refs) {
      const res = await asA(method, path, body);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
    }
    await expectBUnchangedAndServerUp();
  });
});
