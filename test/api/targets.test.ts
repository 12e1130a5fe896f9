import { useTestServer } from "../helpers/server";

const fx = useTestServer();
const { api, bob } = fx;

describe("multistream targets", () => {
  it("create echoes the url once (201); name defaults to the url's host", async () => {
    const res = await api("POST", "/multistream/target", { url: "rtmp://a.rtmp.youtube.com/live2/secret-key" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: "a.rtmp.youtube.com", url: "rtmp://a.rtmp.youtube.com/live2/secret-key", disabled: false });
    expect(res.body.id).toBeTruthy();
    expect(res.body.userId).toBeTruthy();

    const got = await api("GET", `/multistream/target/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: res.body.id, name: "a.rtmp.youtube.com", userId: res.body.userId, disabled: false });
    expect(got.body).not.toHaveProperty("url");
    expect(got.text).not.toContain("secret-key");

    const list = await api("GET", "/multistream/target");
    expect(list.status).toBe(200);
    expect(list.text).not.toContain("secret-key");
    expect(list.body[0]).toMatchObject({ id: res.body.id, userId: res.body.userId, name: "a.rtmp.youtube.com" });
  });

  it.each(["rtmps://live.twitch.tv:443/app/k", "srt://ingest.example.com:9000?streamid=x"])("accepts %s", async (url) => {
    const res = await api("POST", "/multistream/target", { url, name: "named" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ url, name: "named" });
  });

  it.each([
    [{}, /url: is required/],
    [{ url: "http://example.com/live" }, /url: must start with rtmp:\/\/, rtmps:\/\/ or srt:\/\//],
    [{ url: "not-a-url" }, /url: must be an absolute URL/],
    [{ url: "not a url" }, /url: must be printable ASCII without spaces/],
    [{ url: 42 }, /url: must be a string/],
    [{ url: "rtmp://h/a", name: "" }, /name: must not be empty/],
    [{ url: "rtmp://h/a", disabled: "no" }, /disabled: must be a boolean/],
  ])("refuses %j with 422", async (body, message) => {
    const res = await api("POST", "/multistream/target", body);
    expect(res.status).toBe(422);
    expect(res.body.errors.join("\n")).toMatch(message);
  });

  it("PATCH (204) changes only the fields given; a new url replaces the old one", async () => {
    const t1 = (await api("POST", "/multistream/target", { url: "rtmp://one.example.com/app/k1", name: "one" })).body;
    expect((await api("PATCH", `/multistream/target/${t1.id}`, { disabled: true })).status).toBe(204);
    expect((await api("GET", `/multistream/target/${t1.id}`)).body).toMatchObject({ name: "one", disabled: true });
    expect((await api("PATCH", `/multistream/target/${t1.id}`, { name: "renamed", url: "rtmp://two.example.com/app/k2" })).status).toBe(204);
    expect((await api("GET", `/multistream/target/${t1.id}`)).body).toMatchObject({ name: "renamed", disabled: true });
    expect((await fx.t.server.store.targets.get(t1.id))!.url).toBe("rtmp://two.example.com/app/k2");
    expect((await api("PATCH", `/multistream/target/${t1.id}`, {})).status).toBe(204);
    expect(await fx.t.server.store.targets.get(t1.id)).toMatchObject({ name: "renamed", url: "rtmp://two.example.com/app/k2", disabled: true });

    expect((await api("PATCH", `/multistream/target/${t1.id}`, { url: "ftp://x/y" })).status).toBe(422);
    expect((await bob("PATCH", `/multistream/target/${t1.id}`, { name: "mine now" })).status).toBe(404);
    expect((await bob("GET", `/multistream/target/${t1.id}`)).status).toBe(404);
    expect((await fx.t.server.store.targets.get(t1.id))!.name).toBe("renamed");
  });

  it("DELETE (204); refused with the referencing streams named while a stream references it", async () => {
    const target = (await api("POST", "/multistream/target", { url: "rtmp://ref.example.com/app/k" })).body;
    const s1 = (await api("POST", "/stream", { name: "first show", multistream: { targets: [{ id: target.id, profile: "source" }] } })).body;
    const s2 = (await api("POST", "/stream", { name: "second show", multistream: { targets: [{ id: target.id, profile: "source", videoOnly: true }] } })).body;

    expect((await bob("DELETE", `/multistream/target/${target.id}`)).status).toBe(404);
    const refused = await api("DELETE", `/multistream/target/${target.id}`);
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toContain(`"first show" (${s1.id})`);
    expect(refused.body.errors[0]).toContain(`"second show" (${s2.id})`);
    expect((await api("GET", `/multistream/target/${target.id}`)).status).toBe(200);

    await api("PATCH", `/stream/${s1.id}`, { multistream: { targets: [] } });
    await api("DELETE", `/stream/${s2.id}`);
    expect((await api("DELETE", `/multistream/target/${target.id}`)).status).toBe(204);
    expect((await api("GET", `/multistream/target/${target.id}`)).status).toBe(404);
    expect((await api("DELETE", `/multistream/target/${target.id}`)).status).toBe(404);
  });

  it("lists only the caller's targets", async () => {
    const mine = ((await api("GET", "/multistream/target?limit=1000")).body as { id: string }[]).map((x) => x.id);
    expect(mine.length).toBeGreaterThan(0);
    const bobs = (await bob("GET", "/multistream/target?limit=1000")).body as { id: string; userId: string }[];
    for (const x of bobs) expect(mine).not.toContain(x.id);
  });
});
