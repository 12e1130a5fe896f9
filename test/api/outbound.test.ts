import { useTestServer } from "../helpers/server";

// What the API takes as a destination (issue 14): the outbound policy's refusals at create and
// update time. The policy is at its default: nothing allowed.
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

  it("a name that does not resolve (yet) is taken: every connection is checked when it is made", async () => {
    expect((await api("POST", "/webhook", { url: "http://no-such-host.invalid/hook" })).status).toBe(200);
  });
});

describe("with the operator's permission", () => {
  const allowed = useTestServer({ ALLOW_PRIVATE_DESTINATIONS: "true" });
  const listed = useTestServer({ DESTINATION_ALLOW_HOSTS: "10.0.0.1,Receiver.LAN" });

  it("ALLOW_PRIVATE_DESTINATIONS=true takes every private destination", async () => {
    for (const host of REFUSED) {
      expect((await allowed.api("POST", "/webhook", { url: `http://${host}:8080/hook` })).status).toBe(200);
    }
  });

  it("DESTINATION_ALLOW_HOSTS takes the hosts it lists, and only those", async () => {
    expect((await listed.api("POST", "/webhook", { url: "http://10.0.0.1:9000/hook" })).status).toBe(200);
    expect((await listed.api("POST", "/webhook", { url: "http://receiver.lan:9000/hook" })).status).toBe(200);
    expect((await listed.api("POST", "/webhook", { url: "http://127.0.0.1:9000/hook" })).status).toBe(422);
  });
});
