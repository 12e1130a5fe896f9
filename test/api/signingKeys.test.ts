import { importPKCS8, importSPKI, jwtVerify, SignJWT } from "jose";
import { Livepeer } from "livepeer";
import { HTTPClient } from "livepeer/lib/http";
import { apiClient, startTestServer, type TestServer } from "../helpers/server";

// Playback signing keys through the official SDK, unpatched. The SDK's SigningKey model drops
// fields it does not declare, privateKey among them, so the create response's body is read
// through the SDK's own response hook (its public extension point), as an application would.

let t: TestServer;
let sdk: Livepeer;
let bobSdk: Livepeer;
const createdBodies: unknown[] = [];

beforeAll(async () => {
  t = await startTestServer({ MAX_SIGNING_KEYS_PER_USER: "3" });
  const httpClient = new HTTPClient().addHook("response", async (res, req) => {
    if (req.method === "POST" && new URL(req.url).pathname.endsWith("/access-control/signing-key")) createdBodies.push(await res.clone().json());
  });
  sdk = new Livepeer({ apiKey: t.key, serverURL: t.apiUrl, httpClient });
  bobSdk = new Livepeer({ apiKey: await t.keyFor("bob"), serverURL: t.apiUrl });
});
afterAll(() => t.stop());

const pem = (base64: string) => Buffer.from(base64, "base64").toString("utf8");

describe("signing keys through the livepeer SDK", () => {
  it("create returns an ES256 key pair once; its private key signs JWTs the stored public key verifies", async () => {
    const created = await sdk.accessControl.create();
    expect(created.statusCode).toBe(200);
    const key = created.signingKey!;
    expect(key).toMatchObject({ name: "Signing Key", disabled: false });
    expect(key.id).toBeTruthy();
    expect(pem(key.publicKey)).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----$/);

    const raw = createdBodies.at(-1) as { id: string; publicKey: string; privateKey: string; userId: string };
    expect(raw).toMatchObject({ id: key.id, publicKey: key.publicKey, userId: key.userId });
    expect(pem(raw.privateKey)).toMatch(/^-----BEGIN PRIVATE KEY-----\n[\s\S]+\n-----END PRIVATE KEY-----$/);

    // As @livepeer/core's signAccessJwt does: sub = the playback id, pub = the public key as returned.
    const jwt = await new SignJWT({ pub: key.publicKey })
      .setProtectedHeader({ alg: "ES256", typ: "JWT" })
      .setSubject("abcd1234efgh5678")
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(await importPKCS8(pem(raw.privateKey), "ES256"));

    const stored = (await sdk.accessControl.get(key.id!)).signingKey!;
    const { payload } = await jwtVerify(jwt, await importSPKI(pem(stored.publicKey), "ES256"), { algorithms: ["ES256"] });
    expect(payload).toMatchObject({ sub: "abcd1234efgh5678", pub: key.publicKey });

    // What JWT playback looks up: the owner's enabled key named by the `pub` claim.
    expect(await t.server.store.signingKeys.enabledForUser(key.userId!, payload.pub as string)).toMatchObject({ id: key.id });
    expect(await t.server.store.signingKeys.enabledForUser(key.userId!, pem(key.publicKey))).toMatchObject({ id: key.id });
    const bob = await t.server.store.users.getOrCreate("bob");
    expect(await t.server.store.signingKeys.enabledForUser(bob.id, payload.pub as string)).toBeUndefined();

    // A key pair of its own each time.
    const other = (await sdk.accessControl.create()).signingKey!;
    expect(other.publicKey).not.toBe(key.publicKey);
    await expect(jwtVerify(jwt, await importSPKI(pem(other.publicKey), "ES256"))).rejects.toThrow();
    await sdk.accessControl.delete(other.id!);
  });

  it("getAll and get show the public key only", async () => {
    const { signingKey } = await sdk.accessControl.create();
    const all = await sdk.accessControl.getAll();
    expect(all.statusCode).toBe(200);
    expect(all.data!.map((k) => k.id)).toContain(signingKey!.id);

    // Read raw too: the SDK would drop a privateKey, the API must not send one.
    const api = apiClient(t.apiUrl, t.key);
    const list = await api("GET", "/access-control/signing-key");
    expect(list.status).toBe(200);
    expect(list.text).not.toContain("privateKey");
    expect(list.text).not.toContain("PRIVATE");
    const one = await api("GET", `/access-control/signing-key/${signingKey!.id}`);
    expect(one.status).toBe(200);
    expect(Object.keys(one.body).sort()).toEqual(["createdAt", "disabled", "id", "name", "publicKey", "userId"]);
    expect(one.body.publicKey).toBe(signingKey!.publicKey);
    await sdk.accessControl.delete(signingKey!.id!);
  });

  it("update renames and disables; a disabled key opens nothing", async () => {
    const key = (await sdk.accessControl.create()).signingKey!;
    const updated = await sdk.accessControl.update({ disabled: true, name: "paywall" }, key.id!);
    expect(updated.statusCode).toBe(204);
    expect((await sdk.accessControl.get(key.id!)).signingKey).toMatchObject({ id: key.id, name: "paywall", disabled: true });
    expect(await t.server.store.signingKeys.enabledForUser(key.userId!, key.publicKey)).toBeUndefined();

    await sdk.accessControl.update({ disabled: false }, key.id!);
    expect((await sdk.accessControl.get(key.id!)).signingKey).toMatchObject({ name: "paywall", disabled: false });
    expect(await t.server.store.signingKeys.enabledForUser(key.userId!, key.publicKey)).toMatchObject({ id: key.id });
    await sdk.accessControl.delete(key.id!);
  });

  it("another user's key is a 404 to every call", async () => {
    const key = (await sdk.accessControl.create()).signingKey!;
    await expect(bobSdk.accessControl.get(key.id!)).rejects.toMatchObject({ statusCode: 404 });
    await expect(bobSdk.accessControl.update({ disabled: true }, key.id!)).rejects.toMatchObject({ statusCode: 404 });
    await expect(bobSdk.accessControl.delete(key.id!)).rejects.toMatchObject({ statusCode: 404 });
    expect((await bobSdk.accessControl.getAll()).data!.map((k) => k.id)).not.toContain(key.id);
    expect((await sdk.accessControl.get(key.id!)).signingKey).toMatchObject({ disabled: false });
    await sdk.accessControl.delete(key.id!);
  });

  it("delete then get is a 404, and the key verifies no JWT any more", async () => {
    const key = (await sdk.accessControl.create()).signingKey!;
    const deleted = await sdk.accessControl.delete(key.id!);
    expect(deleted.statusCode).toBe(204);
    await expect(sdk.accessControl.get(key.id!)).rejects.toMatchObject({ statusCode: 404 });
    await expect(sdk.accessControl.delete(key.id!)).rejects.toMatchObject({ statusCode: 404 });
    expect(await t.server.store.signingKeys.enabledForUser(key.userId!, key.publicKey)).toBeUndefined();
  });
});

describe("signing key input and limits", () => {
  it("takes a name, refuses bad bodies with 422, and caps keys per user", async () => {
    const api = apiClient(t.apiUrl, await t.keyFor("carol"));
    const named = await api("POST", "/access-control/signing-key", { name: "  my player  " });
    expect(named.status).toBe(200);
    expect(named.body).toMatchObject({ name: "my player", disabled: false });

    const bad = await api("POST", "/access-control/signing-key", { name: "" });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0]).toMatch(/^name: /);
    const badPatch = await api("PATCH", `/access-control/signing-key/${named.body.id}`, { disabled: "yes" });
    expect(badPatch.status).toBe(422);
    expect(badPatch.body.errors).toEqual(["disabled: must be a boolean"]);

    expect((await api("POST", "/access-control/signing-key")).status).toBe(200);
    expect((await api("POST", "/access-control/signing-key")).status).toBe(200);
    const over = await api("POST", "/access-control/signing-key");
    expect(over.status).toBe(400);
    expect(over.body.errors[0]).toMatch(/at most 3 signing keys per user \(MAX_SIGNING_KEYS_PER_USER\)/);

    // Pages of the caller's keys only, newest first, with a Link to the next page.
    const first = await api("GET", "/access-control/signing-key?limit=2");
    expect(first.body).toHaveLength(2);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get("link") ?? "")![1]!;
    const second = await api("GET", next);
    expect(second.body).toHaveLength(1);
    expect(second.body[0].id).toBe(named.body.id);
    expect(second.headers.get("link")).toBeNull();
  });
});
