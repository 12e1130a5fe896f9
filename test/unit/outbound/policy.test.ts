import { OutboundPolicy, pinnedLookup, type Lookup, type ResolvedAddress } from "../../../src/outbound";

// The policy's verdicts, as pure as they get: IP literals are never looked up, names go through
// the system resolver (localhost) or a resolver given to the policy (names that cannot exist
// here). Nothing here opens a connection.

const DEFAULT = { allowPrivate: false, allowHosts: [] };
const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });
/** A resolver with fixed answers, standing for DNS names that do not exist on this machine. */
const answers = (table: Record<string, ResolvedAddress[]>): Lookup => async (host) => {
  const found = table[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
  return found;
};

describe("the outbound policy, by default", () => {
  const policy = new OutboundPolicy(DEFAULT);

  it.each(["127.0.0.1", "169.254.169.254", "10.0.0.1", "::ffff:127.0.0.1", "[::ffff:127.0.0.1]", "[::1]", "100.64.0.1", "64:ff9b::a9fe:a9fe", "localhost", "LOCALHOST"])(
    "refuses %s, saying how the operator can allow it",
    async (host) => {
      const check = await policy.check(host);
      expect(check.outcome).toBe("refused");
      if (check.outcome !== "refused") return;
      expect(check.reason).toMatch(/^destination refused by the outbound policy: .* is not a public address/);
      expect(check.reason).toContain("ALLOW_PRIVATE_DESTINATIONS=true");
      expect(check.reason).toContain("DESTINATION_ALLOW_HOSTS");
      // The operator's detail names the range; the user's reason names no address it resolved to.
      expect(check.detail).toMatch(/(loopback|link-local|private|shared|nat64) address/);
    },
  );

  it("says nothing to the user about what a name resolved to", async () => {
    const p = new OutboundPolicy(DEFAULT, answers({ "metadata.example": [v4("169.254.169.254")] }));
    const check = await p.check("metadata.example");
    expect(check).toMatchObject({ outcome: "refused", detail: "metadata.example resolves to 169.254.169.254, a link-local address" });
    if (check.outcome === "refused") expect(check.reason).not.toContain("169.254");
  });

  it("refuses a name when any of its addresses is not public (the socket could pick that one)", async () => {
    const p = new OutboundPolicy(DEFAULT, answers({ "split.example": [v4("93.184.216.34"), v6("::1")] }));
    expect((await p.check("split.example")).outcome).toBe("refused");
  });

  it("allows public addresses and names, with every address a connection may use", async () => {
    expect(await policy.check("8.8.8.8")).toEqual({ outcome: "allowed", host: "8.8.8.8", addresses: [v4("8.8.8.8")], nonPublic: false });
    expect(await policy.check("[2606:4700:4700::1111]")).toMatchObject({ outcome: "allowed", addresses: [v6("2606:4700:4700::1111")] });
    const p = new OutboundPolicy(DEFAULT, answers({ "hooks.example": [v4("93.184.216.34"), v6("2606:2800:220:1::1")] }));
    expect(await p.check("Hooks.Example")).toEqual({ outcome: "allowed", host: "hooks.example", addresses: [v4("93.184.216.34"), v6("2606:2800:220:1::1")], nonPublic: false });
  });

  it("reports a name that does not resolve, or whose lookup hangs, as unresolved", async () => {
    expect(await new OutboundPolicy(DEFAULT, answers({})).check("nowhere.invalid")).toMatchObject({ outcome: "unresolved", reason: "cannot resolve host nowhere.invalid", code: "ENOTFOUND" });
    const hanging = new OutboundPolicy(DEFAULT, () => new Promise(() => {}), 50);
    expect(await hanging.check("slow.example")).toMatchObject({ outcome: "unresolved", code: "ETIMEOUT" });
  });
});

describe("the outbound policy, as the operator allows", () => {
  it("ALLOW_PRIVATE_DESTINATIONS=true allows everything, noting that it is not public", async () => {
    const policy = new OutboundPolicy({ allowPrivate: true, allowHosts: [] });
    for (const host of ["127.0.0.1", "10.0.0.1", "169.254.169.254", "localhost"]) {
      expect(await policy.check(host)).toMatchObject({ outcome: "allowed", nonPublic: true });
    }
  });

  it("DESTINATION_ALLOW_HOSTS=127.0.0.1 allows that address in any spelling, and names resolving to it, and nothing else", async () => {
    const policy = new OutboundPolicy({ allowPrivate: false, allowHosts: ["127.0.0.1"] }, answers({ "receiver.lan": [v4("127.0.0.1")], "other.lan": [v4("127.0.0.2")] }));
    expect((await policy.check("127.0.0.1")).outcome).toBe("allowed");
    expect((await policy.check("[::ffff:127.0.0.1]")).outcome).toBe("allowed");
    expect((await policy.check("receiver.lan")).outcome).toBe("allowed");
    expect((await policy.check("other.lan")).outcome).toBe("refused");
    expect((await policy.check("127.0.0.2")).outcome).toBe("refused");
    expect((await policy.check("10.0.0.1")).outcome).toBe("refused");
  });

  it("a host name listed allows that name (exact, case-insensitive) whatever it resolves to", async () => {
    const policy = new OutboundPolicy({ allowPrivate: false, allowHosts: ["Receiver.LAN"] }, answers({ "receiver.lan": [v4("10.1.2.3")], "x.receiver.lan": [v4("10.1.2.3")] }));
    expect(await policy.check("RECEIVER.lan")).toMatchObject({ outcome: "allowed", nonPublic: true });
    expect((await policy.check("x.receiver.lan")).outcome).toBe("refused");
    expect((await policy.check("10.1.2.3")).outcome).toBe("refused");
  });
});

describe("pinnedLookup", () => {
  const lookup = pinnedLookup([v4("93.184.216.34"), v6("2606:2800:220:1::1")]);
  const ask = (options: object) =>
    new Promise<unknown[]>((resolve) => (lookup as unknown as (h: string, o: object, cb: (...a: unknown[]) => void) => void)("hooks.example", options, (...a) => resolve(a)));

  it("answers with the checked addresses only, by family, one or all", async () => {
    expect(await ask({})).toEqual([null, "93.184.216.34", 4]);
    expect(await ask({ family: 6 })).toEqual([null, "2606:2800:220:1::1", 6]);
    expect(await ask({ all: true })).toEqual([null, [v4("93.184.216.34"), v6("2606:2800:220:1::1")]]);
    const [err] = await new Promise<unknown[]>((resolve) =>
      (pinnedLookup([v4("93.184.216.34")]) as unknown as (h: string, o: object, cb: (...a: unknown[]) => void) => void)("h", { family: 6 }, (...a) => resolve(a)),
    );
    expect(err).toMatchObject({ code: "ENOTFOUND" });
  });
});
