import net from "node:net";

// What kind of address an IP is, as pure functions: the outbound policy refuses every kind but
// public. A destination chosen by an API user must not reach what only the operator's own
// network reaches (169.254.169.254 cloud metadata, 127.0.0.1 admin ports, the LAN), nor do so
// through an IPv6 form that embeds such an IPv4 address.

export type AddressKind =
  | "unspecified"
  | "loopback"
  | "private"
  | "link-local"
  /** RFC 6598 carrier-grade NAT: inside a provider's network, never on the internet. */
  | "shared"
  | "multicast"
  /** Documentation, benchmarking, protocol assignments, broadcast, future use, deprecated forms. */
  | "reserved"
  /** 64:ff9b::/96 and 64:ff9b:1::/48: a NAT64 gateway turns them into any IPv4 address. */
  | "nat64"
  /** 2002::/16: a 6to4 relay turns it into any IPv4 address. */
  | "6to4"
  /** 2001::/32: Teredo tunnels, whose relays reach any IPv4 address. */
  | "teredo";

type Range = [AddressKind, number[], number];

const v4 = (dotted: string) => dotted.split(".").map(Number);

// Checked in order; the first that matches names the kind.
const IPV4_RANGES: Range[] = [
  ["unspecified", v4("0.0.0.0"), 8],
  ["loopback", v4("127.0.0.0"), 8],
  ["private", v4("10.0.0.0"), 8],
  ["private", v4("172.16.0.0"), 12],
  ["private", v4("192.168.0.0"), 16],
  ["link-local", v4("169.254.0.0"), 16],
  ["shared", v4("100.64.0.0"), 10],
  ["reserved", v4("192.0.0.0"), 24],
  ["reserved", v4("192.0.2.0"), 24],
  ["reserved", v4("192.88.99.0"), 24],
  ["reserved", v4("198.18.0.0"), 15],
  ["reserved", v4("198.51.100.0"), 24],
  ["reserved", v4("203.0.113.0"), 24],
  ["multicast", v4("224.0.0.0"), 4],
  ["reserved", v4("240.0.0.0"), 4],
];

const IPV6_RANGES: Range[] = [
  ["nat64", ipv6Bytes("64:ff9b::")!, 96],
  ["nat64", ipv6Bytes("64:ff9b:1::")!, 48],
  ["6to4", ipv6Bytes("2002::")!, 16],
  ["reserved", ipv6Bytes("2001:db8::")!, 32],
  ["teredo", ipv6Bytes("2001::")!, 32],
  // Discard-only (RFC 6666).
  ["reserved", ipv6Bytes("100::")!, 64],
  // IPv4-translated (SIIT, ::ffff:0:a.b.c.d).
  ["reserved", ipv6Bytes("::ffff:0:0:0")!, 96],
  ["private", ipv6Bytes("fc00::")!, 7],
  // Deprecated site-local (RFC 3879), still routed inside some networks.
  ["private", ipv6Bytes("fec0::")!, 10],
  ["link-local", ipv6Bytes("fe80::")!, 10],
  ["multicast", ipv6Bytes("ff00::")!, 8],
];

function inRange(bytes: number[], prefix: number[], bits: number): boolean {
  for (let i = 0; i < bits; i += 8) {
    const take = Math.min(8, bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[i / 8]! & mask) !== (prefix[i / 8]! & mask)) return false;
  }
  return true;
}

const kindIn = (ranges: Range[], bytes: number[]): AddressKind | null => ranges.find(([, p, bits]) => inRange(bytes, p, bits))?.[0] ?? null;

/** The 16 bytes of an IPv6 address (`::`, embedded dotted quads and zone ids handled), or undefined. */
export function ipv6Bytes(ip: string): number[] | undefined {
  const text = ip.replace(/%.*$/, "");
  if (!net.isIPv6(text)) return undefined;
  let groups = text;
  let tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    tail = v4(dotted[1]!);
    groups = text.slice(0, -dotted[1]!.length) + "0:0";
  }
  const [head, rest] = groups.split("::") as [string, string | undefined];
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const words = rest === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = words.flatMap((w) => [w >> 8, w & 0xff]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

/**
 * The IPv4 address an IPv6 one stands for when it is IPv4-mapped (::ffff:a.b.c.d), which a
 * dual-stack socket connects to as that IPv4 address, or IPv4-compatible (::a.b.c.d, deprecated).
 */
function embeddedIpv4(bytes: number[]): { v4: number[]; form: "mapped" | "compatible" } | undefined {
  if (bytes.slice(0, 10).some((b) => b !== 0)) return undefined;
  if (bytes[10] === 0xff && bytes[11] === 0xff) return { v4: bytes.slice(12), form: "mapped" };
  if (bytes[10] === 0 && bytes[11] === 0) {
    const last = bytes.slice(12);
    // :: and ::1 are IPv6's own unspecified and loopback addresses, not embedded IPv4.
    if (last.every((b) => b === 0) || (last.slice(0, 3).every((b) => b === 0) && last[3] === 1)) return undefined;
    return { v4: last, form: "compatible" };
  }
  return undefined;
}

/** What kind of non-public address `ip` is, or null for a public one (or not an IP at all). */
export function classifyAddress(ip: string): AddressKind | null {
  const family = net.isIP(ip.replace(/%.*$/, ""));
  if (family === 4) return kindIn(IPV4_RANGES, v4(ip));
  if (family !== 6) return null;
  const bytes = ipv6Bytes(ip)!;
  const embedded = embeddedIpv4(bytes);
  if (embedded) {
    const kind = kindIn(IPV4_RANGES, embedded.v4);
    // ::8.8.8.8 is not how anyone reaches 8.8.8.8 any more: a deprecated form, refused too.
    return kind ?? (embedded.form === "compatible" ? "reserved" : null);
  }
  if (bytes.every((b) => b === 0)) return "unspecified";
  if (bytes.slice(0, 15).every((b) => b === 0) && bytes[15] === 1) return "loopback";
  return kindIn(IPV6_RANGES, bytes);
}

/**
 * One spelling per address, for comparing an operator's allow-list with what a name resolved
 * to: `127.0.0.1`, `::ffff:127.0.0.1` and `::ffff:7f00:1` are the same destination.
 */
export function addressKey(ip: string): string | undefined {
  const family = net.isIP(ip.replace(/%.*$/, ""));
  if (family === 4) return ip;
  if (family !== 6) return undefined;
  const bytes = ipv6Bytes(ip)!;
  const embedded = embeddedIpv4(bytes);
  if (embedded?.form === "mapped") return embedded.v4.join(".");
  return bytes.map((b) => b.toString(16).padStart(2, "0")).join("");
}
