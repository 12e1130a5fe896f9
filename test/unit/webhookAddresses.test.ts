import { classifyAddress } from "../../src/webhooks";

describe("receiver address classifier (WEBHOOK_BLOCK_PRIVATE)", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.10", "private"],
    ["::ffff:192.168.1.10", "private"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["fec0::1", "private"],
    ["169.254.169.254", "link-local"],
    ["fe80::1", "link-local"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["100.64.0.1", "shared"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["198.18.0.1", "reserved"],
  ])("%s is %s", (ip, kind) => {
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
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
  ])("%s is public", (ip) => {
    expect(classifyAddress(ip)).toBeNull();
  });

  it.each(["localhost", "", "999.1.1.1", "example.com"])("%j is not an address at all", (text) => {
    expect(classifyAddress(text)).toBeNull();
  });
});
