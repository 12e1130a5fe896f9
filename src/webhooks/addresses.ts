import net from "node:net";

// WEBHOOK_BLOCK_PRIVATE: a webhook url is chosen by an API user, and onair POSTs to it from
// inside the operator's network. Where users are not trusted, receivers that resolve to
// addresses not reachable from the internet are refused, so a webhook cannot probe the
// operator's own services (169.254.169.254 cloud metadata, 127.0.0.1 admin ports, the LAN).

export type AddressKind = "unspecified" | "loopback" | "private" | "link-local" | "shared" | "multicast" | "reserved";

const RANGES: [AddressKind, string, number, "ipv4" | "ipv6"][] = [
  ["unspecified", "0.0.0.0", 8, "ipv4"],
  ["loopback", "127.0.0.0", 8, "ipv4"],
  ["private", "10.0.0.0", 8, "ipv4"],
  ["private", "172.16.0.0", 12, "ipv4"],
  ["private", "192.168.0.0", 16, "ipv4"],
  ["link-local", "169.254.0.0", 16, "ipv4"],
  // RFC 6598 carrier-grade NAT: inside a provider's network, never on the internet.
  ["shared", "100.64.0.0", 10, "ipv4"],
  ["reserved", "192.0.0.0", 24, "ipv4"],
  ["reserved", "198.18.0.0", 15, "ipv4"],
  ["multicast", "224.0.0.0", 4, "ipv4"],
  ["reserved", "240.0.0.0", 4, "ipv4"],
  ["unspecified", "::", 128, "ipv6"],
  ["loopback", "::1", 128, "ipv6"],
  ["private", "fc00::", 7, "ipv6"],
  // Deprecated site-local (RFC 3879), still routed inside some networks.
  ["private", "fec0::", 10, "ipv6"],
  ["link-local", "fe80::", 10, "ipv6"],
  ["multicast", "ff00::", 8, "ipv6"],
];

// One BlockList per kind. It also matches IPv4-mapped IPv6 (::ffff:127.0.0.1) against the IPv4
// ranges, which a hand-written prefix check would miss.
const LISTS = (() => {
  const lists = new Map<AddressKind, net.BlockList>();
  for (const [kind, prefix, bits, family] of RANGES) {
    let list = lists.get(kind);
    if (!list) lists.set(kind, (list = new net.BlockList()));
    list.addSubnet(prefix, bits, family);
  }
  return lists;
})();

/** What kind of non-public address `ip` is, or null for a public one (or not an IP at all). */
export function classifyAddress(ip: string): AddressKind | null {
  const family = net.isIP(ip);
  if (family === 0) return null;
  const type = family === 4 ? "ipv4" : "ipv6";
  for (const [kind, list] of LISTS) if (list.check(ip, type)) return kind;
  return null;
}
