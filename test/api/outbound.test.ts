import { useTestServer } from "../helpers/server";

// What the API takes as a destination (issue 14): the outbound policy's refusals at create and
// update time, and target urls that ffmpeg would read more into than a url. The policy is at
// its default: nothing allowed.
const fx = useTestServer({ DESTINATION_ALLOW_HOSTS: "" });
const { api } = fx;

const REFUSED = ["127.0.0.1", "169.254.169.254", "10.0.0.1", "[::ffff:127.0.0.1]", "localhost"];
const policyRefusal = /destination refused by the outbound policy: .* is not a public address \(an operator can allow it with ALLOW_PRIVATE_DESTINATIONS=true or by listing the host in DESTINATION_ALLOW_HOSTS\)/;

describe("the outbound policy at create and update time (422)", () => {
  it.each(REFUSED)("a webhook at %s", async (host) => {
    const res = await api("POST", "/webhook", { url: `http://${host}:8080/hook` });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([expect.stringMatching(new RegExp(`^url: ${policyRefusal.source}$`))]);
    const ok = (await api("POST", "/webhook", { url: "http://hooks.example.com/hook" })).body;
    const put = await api("PUT", `/webhook/${ok.id}`, { url: `https://${host}/hook` });
    expect(put.status).toBe(422);
    expect(put.body.errors[0]).toMatch(policyRefusal);
    expect((await api("GET", `/webhook/${ok.id}`)).body.url).toBe("http://hooks.example.com/hook");
  });

  it.each(REFUSED)("a multistream target at %s", async (host) => {
    const res = await api("POST", "/multistream/target", { url: `rtmp://${host}:1935/app/key` });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([expect.stringMatching(new RegExp(`^url: ${policyRefusal.source}$`))]);
    const srt = await api("POST", "/multistream/target", { url: `srt://${host}:9000?streamid=k` });
    expect(srt.status).toBe(422);
    const ok = (await api("POST", "/multistream/target", { url: "rtmp://ingest.example.com/app/key" })).body;
    expect((await api("PATCH", `/multistream/target/${ok.id}`, { url: `rtmps://${host}/app/key` })).status).toBe(422);
    const inline = await api("POST", "/stream", { name: "x", multistream: { targets: [{ spec: { url: `rtmp://${host}/app/key` }, profile: "source" }] } });
    expect(inline.status).toBe(422);
    expect(inline.body.errors[0]).toMatch(/^multistream\.targets\[0\]\.spec\.url: destination refused by the outbound policy/);
  });

  it("nothing was created by a refused request", async () => {
    const targets = (await api("GET", "/multistream/target?limit=1000")).body as { name: string }[];
    expect(targets.map((t) => t.name).filter((n) => n !== "ingest.example.com")).toEqual([]);
    const streams = (await api("GET", "/stream?limit=1000")).body as unknown[];
    expect(streams).toEqual([]);
  });

  it("a name that does not resolve (yet) is taken: every connection is checked when it is made", async () => {
    expect((await api("POST", "/multistream/target", { url: "rtmp://no-such-host.invalid/app/key" })).status).toBe(201);
    expect((await api("POST", "/webhook", { url: "http://no-such-host.invalid/hook" })).status).toBe(200);
  });
});

describe("target urls", () => {
  it.each([
    ["a leading tab", "\trtmp://a.example.com/app/key", /url: must be printable ASCII without spaces, tabs, newlines/],
    ["a newline inside", "rtmp://a.example.com/app/key\n-f", /url: must be printable ASCII/],
    ["an SRT listener", "srt://0.0.0.0:40007?mode=listener", /url: srt option mode: only mode=caller is allowed/],
    ["an SRT rendezvous", "srt://ingest.example.com:40007?mode=rendezvous", /only mode=caller/],
    ["an SRT option off the list", "srt://ingest.example.com:9000?listen_timeout=5", /srt option "listen_timeout" is not allowed/],
    ["a local file", "file:///etc/hosts", /must start with rtmp:\/\/, rtmps:\/\/ or srt:\/\//],
  ])("%s is refused (422)", async (_case, url, message) => {
    const res = await api("POST", "/multistream/target", { url });
    expect(res.status).toBe(422);
    expect(res.body.errors.join("\n")).toMatch(message);
    const inline = await api("POST", "/stream", { name: "x", multistream: { targets: [{ spec: { url }, profile: "source" }] } });
    expect(inline.status).toBe(422);
  });

  it("a Facebook rtmps url is taken as it is, its query part of the stream name", async () => {
    const url = "rtmps://live-api-s.facebook.com:443/rtmp/FB-1234567890-0-AbCdEfGh?s_bl=1&s_sw=0";
    const res = await api("POST", "/multistream/target", { url, name: "Facebook" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ url, tlsVerify: true });
    expect((await fx.t.server.store.targets.get(res.body.id))!.url).toBe(url);
  });

  it("is stored in its canonical form (scheme and host in lower case)", async () => {
    const res = await api("POST", "/multistream/target", { url: "RTMP://Ingest.Example.COM/App/Key" });
    expect(res.body.url).toBe("rtmp://ingest.example.com/App/Key");
  });

  it("tlsVerify (an onair extension): on unless the target turns it off", async () => {
    const t = (await api("POST", "/multistream/target", { url: "rtmps://self-signed.example.com/app/key", tlsVerify: false })).body;
    expect((await api("GET", `/multistream/target/${t.id}`)).body.tlsVerify).toBe(false);
    expect((await api("PATCH", `/multistream/target/${t.id}`, { tlsVerify: true })).status).toBe(204);
    expect((await api("GET", `/multistream/target/${t.id}`)).body.tlsVerify).toBe(true);
    expect((await api("PATCH", `/multistream/target/${t.id}`, { tlsVerify: "no" })).status).toBe(422);
  });
});

describe("with the operator's permission", () => {
  const allowed = useTestServer({ ALLOW_PRIVATE_DESTINATIONS: "true" });
  const listed = useTestServer({ DESTINATION_ALLOW_HOSTS: "10.0.0.1,Receiver.LAN" });

  it("ALLOW_PRIVATE_DESTINATIONS=true takes every private destination", async () => {
    for (const host of REFUSED) {
      expect((await allowed.api("POST", "/webhook", { url: `http://${host}:8080/hook` })).status).toBe(200);
      expect((await allowed.api("POST", "/multistream/target", { url: `rtmp://${host}/app/key` })).status).toBe(201);
    }
  });

  it("DESTINATION_ALLOW_HOSTS takes the hosts it lists, and only those", async () => {
    expect((await listed.api("POST", "/multistream/target", { url: "rtmp://10.0.0.1/app/key" })).status).toBe(201);
    expect((await listed.api("POST", "/webhook", { url: "http://receiver.lan:9000/hook" })).status).toBe(200);
    expect((await listed.api("POST", "/multistream/target", { url: "rtmp://10.0.0.2/app/key" })).status).toBe(422);
    expect((await listed.api("POST", "/webhook", { url: "http://127.0.0.1:9000/hook" })).status).toBe(422);
  });
});
