import { clientKey } from "../../../src/http/hls";

describe("clientKey: the address a held-open request is counted under", () => {
  it.each([
    ["203.0.113.7", "203.0.113.7"],
    ["::ffff:203.0.113.7", "203.0.113.7"],
    ["2001:db8:aa:bb:1:2:3:4", "2001:db8:aa:bb::/64"],
    ["2001:db8:aa:bb::1", "2001:db8:aa:bb::/64"],
    ["2001:0db8:00aa:00bb:ffff::9", "2001:db8:aa:bb::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
    ["", ""],
  ])("%j → %j", (ip, key) => {
    expect(clientKey(ip)).toBe(key);
  });

  it("every address of one /64 shares a key; the next /64 does not", () => {
    const keys = new Set(["2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2:0:0:0:abcd"].map(clientKey));
    expect(keys.size).toBe(1);
    expect(clientKey("2001:db8:1:3::1")).not.toBe([...keys][0]);
  });
});
