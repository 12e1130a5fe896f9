import dns from "node:dns";
import type { LookupFunction } from "node:net";
import net from "node:net";
import { addressKey, classifyAddress, type AddressKind } from "./addresses";

// The one outbound policy: every connection that an API user's input makes (webhook deliveries,
// multistream pushes, later pulls) asks it first. A host is resolved (every address), and a
// destination any of whose addresses is not public is refused, unless the operator allows it:
// ALLOW_PRIVATE_DESTINATIONS=true allows every destination, DESTINATION_ALLOW_HOSTS the hosts
// and addresses it lists. Self-hosters whose receivers live on their own network set one.

export interface OutboundSettings {
  /** ALLOW_PRIVATE_DESTINATIONS: no destination is refused. */
  allowPrivate: boolean;
  /** DESTINATION_ALLOW_HOSTS: host names (lower case) and IP addresses allowed whatever they resolve to. */
  allowHosts: string[];
}

export const DEFAULT_OUTBOUND: OutboundSettings = { allowPrivate: false, allowHosts: [] };

/** What every refusal tells the user: how the operator can allow the destination. */
export const HOW_TO_ALLOW = "an operator can allow it with ALLOW_PRIVATE_DESTINATIONS=true or by listing the host in DESTINATION_ALLOW_HOSTS";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type DestinationCheck =
  /** Connect to one of `addresses`, and only to those. */
  | { outcome: "allowed"; host: string; addresses: ResolvedAddress[]; /** Some address is not public: the operator allowed it. */ nonPublic: boolean }
  /**
   * `reason` is what the user sees, the same for every refused destination (nothing about which
   * address or range); `detail` says which, for the operator's log.
   */
  | { outcome: "refused"; host: string; reason: string; detail: string }
  /** DNS gave no answer: nothing was checked and nothing may be connected to. */
  | { outcome: "unresolved"; host: string; reason: string; code: string };

export type Lookup = (host: string) => Promise<ResolvedAddress[]>;

/** getaddrinfo, as ffmpeg and Node's sockets resolve (so /etc/hosts counts): every address. */
const systemLookup: Lookup = (host) =>
  new Promise((resolve, reject) =>
    dns.lookup(host, { all: true, verbatim: true }, (err, addresses) =>
      err ? reject(err) : resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))),
    ),
  );

/** `[::1]` → `::1`; `Example.COM.` → `example.com`. */
export function normalizeHost(host: string): string {
  return host.replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "").toLowerCase();
}

/** A DESTINATION_ALLOW_HOSTS entry as the policy compares it, or undefined when it is neither a host name nor an IP. */
export function allowHostEntry(entry: string): string | undefined {
  const host = normalizeHost(entry.trim());
  if (net.isIP(host)) return addressKey(host);
  return /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/.test(host) && host.length <= 253 ? host : undefined;
}

export class OutboundPolicy {
  private readonly allowed: Set<string>;

  constructor(
    readonly settings: OutboundSettings,
    private readonly lookup: Lookup = systemLookup,
    /** A resolver that never answers must not hold an attempt (or an API request) for ever. */
    private readonly lookupTimeoutMs = 5_000,
  ) {
    this.allowed = new Set(settings.allowHosts.map((h) => allowHostEntry(h) ?? h.toLowerCase()));
  }

  /**
   * The verdict on `host` given the addresses it resolved to (pure): allowed when the operator
   * allows every destination or this host by name, or when each address is public or listed.
   */
  judge(host: string, addresses: ResolvedAddress[]): DestinationCheck {
    const name = normalizeHost(host);
    const listedByName = this.allowed.has(net.isIP(name) ? (addressKey(name) ?? name) : name);
    let nonPublic = false;
    for (const a of addresses) {
      const kind = classifyAddress(a.address);
      if (kind === null) continue;
      nonPublic = true;
      if (this.settings.allowPrivate || listedByName || this.allowed.has(addressKey(a.address) ?? a.address)) continue;
      return this.refusal(name, a.address, kind);
    }
    return { outcome: "allowed", host: name, addresses, nonPublic };
  }

  /** Resolves `host` (an IP literal is its own answer) and judges it. Never throws. */
  async check(host: string): Promise<DestinationCheck> {
    const name = normalizeHost(host);
    const family = net.isIP(name);
    if (family !== 0) return this.judge(name, [{ address: name, family: family === 6 ? 6 : 4 }]);
    let timer: NodeJS.Timeout | undefined;
    try {
      const addresses = await Promise.race([
        this.lookup(name),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(Object.assign(new Error("DNS lookup timed out"), { code: "ETIMEOUT" })), this.lookupTimeoutMs);
        }),
      ]);
      if (addresses.length === 0) return { outcome: "unresolved", host: name, reason: `cannot resolve host ${name}`, code: "ENOTFOUND" };
      return this.judge(name, addresses);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "EAI_FAIL";
      return { outcome: "unresolved", host: name, reason: `cannot resolve host ${name}`, code };
    } finally {
      clearTimeout(timer);
    }
  }

  private refusal(host: string, address: string, kind: AddressKind): DestinationCheck {
    return {
      outcome: "refused",
      host,
      reason: `destination refused by the outbound policy: ${host} is not a public address (${HOW_TO_ALLOW})`,
      detail: host === normalizeHost(address) ? `${address} is a ${kind} address` : `${host} resolves to ${address}, a ${kind} address`,
    };
  }
}

/**
 * A socket `lookup` that answers with the addresses a check allowed, and never asks DNS again:
 * the address connected to is the one checked, so a name that resolves elsewhere a moment later
 * (DNS rebinding) cannot slip past.
 */
export function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
    if (wanted.length === 0) {
      return callback(Object.assign(new Error(`${hostname} has no IPv${options.family} address`), { code: "ENOTFOUND" }), "", 0);
    }
    // Node asks for every address when it races IPv4 and IPv6 (autoSelectFamily), one otherwise.
    if (options.all) return (callback as unknown as (e: null, a: ResolvedAddress[]) => void)(null, wanted);
    callback(null, wanted[0]!.address, wanted[0]!.family);
  };
}
