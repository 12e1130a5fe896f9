import { addressKey, classifyAddress } from "../../../src/outbound";

describe("address classifier (the outbound policy's ranges)", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.10", "private"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["fec0::1", "private"],
    ["169.254.169.254", "link-local"],
    ["169.254.0.1", "link-local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["::", "unspecified"],
    ["100.64.0.1", "shared"],
    ["100.127.255.255", "shared"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["240.0.0.1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.1", "reserved"],
    ["198.51.100.7", "reserved"],
    ["203.0.113.9", "reserved"],
    ["2001:db8::1", "reserved"],
    ["100::1", "reserved"],
    // NAT64, 6to4 and Teredo reach any IPv4 address through a gateway: refused whole.
    ["64:ff9b::a00:1", "nat64"],
    ["64:ff9b::8.8.8.8", "nat64"],
    ["64:ff9b:1::1", "nat64"],
    ["2002:7f00:1::1", "6to4"],
    ["2002:808:808::1", "6to4"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"],
    ["2001::1", "teredo"],
  ])("%s is %s", (ip, kind) => {
    expect(classifyAddress(ip)).toBe(kind);
  });

  it.each([
    // IPv4-mapped: a dual-stack socket connects to the IPv4 address itself.
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["0:0:0:0:0:ffff:7f00:0001", "loopback"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:a00:1", "private"],
    ["::ffff:192.168.1.10", "private"],
    ["::ffff:169.254.169.254", "link-local"],
    ["::ffff:a9fe:a9fe", "link-local"],
    ["::ffff:100.64.0.1", "shared"],
    ["::ffff:0.0.0.0", "unspecified"],
    ["::ffff:224.0.0.1", "multicast"],
    // IPv4-compatible (deprecated): the embedded kind, and refused even when that is public.
    ["::127.0.0.1", "loopback"],
    ["::10.0.0.1", "private"],
    ["::169.254.169.254", "link-local"],
    ["::8.8.8.8", "reserved"],
    // SIIT's IPv4-translated form.
    ["::ffff:0:7f00:1", "reserved"],
  ])("the IPv6 form %s is %s", (ip, kind) => {
    expect(classifyAddress(ip)).toBe(kind);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.15.255.255",
    "172.32.0.0",
    "192.169.0.1",
    "100.63.255.255",
    "100.128.0.0",
    "169.253.255.255",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2a03:2880:f003:c07:face:b00c::2",
    "::ffff:8.8.8.8",
    "64:ff9c::1",
    "2003::1",
    "2001:4860:4860::8888",
  ])("%s is public", (ip) => {
    expect(classifyAddress(ip)).toBeNull();
  });

  it.each(["localhost", "", "999.1.1.1", "example.com", "127.1", "2130706433", "[::1]"])("%j is not an address at all", (text) => {
    expect(classifyAddress(text)).toBeNull();
  });

  it("gives every spelling of one address the same key", () => {
    expect(addressKey("::ffff:127.0.0.1")).toBe("127.0.0.1");
    expect(addressKey("::ffff:7f00:1")).toBe("127.0.0.1");
    expect(addressKey("::1")).toBe(addressKey("0:0:0:0:0:0:0:1"));
    expect(addressKey("2001:DB8::1")).toBe(addressKey("2001:db8:0::1"));
    expect(addressKey("example.com")).toBeUndefined();
  });
});
