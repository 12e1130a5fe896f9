import net from "node:net";

// A multistream target's url, parsed and rebuilt as pure functions. ffmpeg gets only the
// canonical string built here, never what the user typed: a url is an argument of a process
// this server runs, and ffmpeg reads more into it than a browser would (a leading tab makes it
// a local file name, `?mode=listener` makes an SRT "destination" a server on a public port).

export type TargetScheme = "rtmp" | "rtmps" | "srt";

export const TARGET_SCHEMES: readonly TargetScheme[] = ["rtmp", "rtmps", "srt"];

/**
 * The SRT options a target may set in its query (all for the caller side). Anything else,
 * listener and rendezvous modes above all, is refused rather than passed on.
 */
export const SRT_OPTIONS: Record<string, (v: string) => string | undefined> = {
  streamid: () => undefined,
  passphrase: (v) => (v.length >= 10 && v.length <= 79 ? undefined : "must be 10 to 79 characters"),
  pbkeylen: (v) => (["16", "24", "32"].includes(v) ? undefined : "must be 16, 24 or 32"),
  latency: (v) => integer(v, 0, 60_000_000),
  timeout: (v) => integer(v, 0, 3_600_000_000),
  connect_timeout: (v) => integer(v, 0, 3_600_000),
  pkt_size: (v) => integer(v, 188, 1456),
  payload_size: (v) => integer(v, 188, 1456),
  mode: (v) => (v === "caller" ? undefined : "only mode=caller is allowed: onair connects to the destination, it never listens"),
};

function integer(v: string, min: number, max: number): string | undefined {
  return /^\d{1,12}$/.test(v) && Number(v) >= min && Number(v) <= max ? undefined : `must be an integer from ${min} to ${max}`;
}

export interface TargetUrl {
  scheme: TargetScheme;
  /** As ffmpeg resolves it: a host name (lower case), an IPv4 address, or an IPv6 one without brackets. */
  host: string;
  hostKind: "name" | "ipv4" | "ipv6";
  port: number | undefined;
  /** `user:password` (rtmp authentication), as given. */
  userinfo: string | undefined;
  /**
   * rtmp(s): everything after the host, as given: `/app/streamkey?query`. ffmpeg's rtmp takes the
   * query as part of the stream name (Facebook's keys carry `?s_bl=…`), never as its options.
   */
  path: string;
  /** srt: the options of the query, in order, values as given. */
  options: [string, string][];
  /** The url as ffmpeg gets it. */
  canonical: string;
}

export type ParsedTargetUrl = { ok: true; url: TargetUrl } | { ok: false; error: string };

// Every character of a target url: printable ASCII without spaces. Anything else (tabs,
// newlines, other control characters, non-ASCII) is refused, never trimmed or encoded away.
const PRINTABLE = /^[\x21-\x7e]+$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
// Letters, digits, `-` and `_` in dot-separated labels; the last label starts with a letter, so
// no spelling of a number (`2130706433`, `127.1`, `0x7f.1`) passes for a name.
const HOST_NAME = /^([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** `rtmp://host[:port]/app/key[?query]`, `rtmps://…` or `srt://host:port[?options]`, checked and rebuilt. */
export function parseTargetUrl(input: string): ParsedTargetUrl {
  const fail = (error: string): ParsedTargetUrl => ({ ok: false, error });
  if (!PRINTABLE.test(input)) {
    return fail("must be printable ASCII without spaces, tabs, newlines or other control characters (percent-encode anything else)");
  }
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/.exec(input);
  if (!m) return fail(`must be an absolute URL, got "${input.slice(0, 100)}"`);
  const scheme = m[1]!.toLowerCase();
  if (!(TARGET_SCHEMES as readonly string[]).includes(scheme)) return fail(`must start with rtmp://, rtmps:// or srt://, got ${scheme}://`);
  const authority = m[2]!;
  const rest = m[3]!;

  const at = authority.lastIndexOf("@");
  const userinfo = at >= 0 ? authority.slice(0, at) : undefined;
  const hostPort = at >= 0 ? authority.slice(at + 1) : authority;
  const hp = /^(\[[^\]]*\]|[^:[\]]*)(?::(\d{1,5}))?$/.exec(hostPort);
  if (!hp) return fail(`has a malformed host or port: "${hostPort.slice(0, 100)}"`);
  const rawHost = hp[1]!;
  let host: string;
  let hostKind: TargetUrl["hostKind"];
  if (rawHost.startsWith("[")) {
    host = rawHost.slice(1, -1).toLowerCase();
    if (!net.isIPv6(host) || host.includes("%")) return fail(`has a malformed IPv6 address: "${rawHost.slice(0, 100)}"`);
    hostKind = "ipv6";
  } else if (IPV4.test(rawHost)) {
    host = rawHost;
    hostKind = "ipv4";
  } else {
    host = rawHost.toLowerCase();
    if (host === "" || host.length > 253 || !HOST_NAME.test(host)) {
      return fail(`must name its host with letters, digits, - and . (or an IPv4 address, or an IPv6 one in brackets), got "${rawHost.slice(0, 100)}"`);
    }
    hostKind = "name";
  }
  const port = hp[2] === undefined ? undefined : Number(hp[2]);
  if (port !== undefined && (port < 1 || port > 65535)) return fail(`has port ${port}; ports are 1 to 65535`);
  const hostText = hostKind === "ipv6" ? `[${host}]` : host;
  const authorityText = `${userinfo !== undefined ? `${userinfo}@` : ""}${hostText}${port !== undefined ? `:${port}` : ""}`;

  if (scheme === "srt") {
    if (userinfo !== undefined) return fail("srt:// urls carry no user name or password (use passphrase=)");
    if (port === undefined) return fail("srt:// needs a port: srt://host:port");
    const q = /^\/?(?:\?(.*))?$/.exec(rest);
    if (!q) return fail("srt:// takes no path: srt://host:port?streamid=…");
    const options: [string, string][] = [];
    for (const pair of (q[1] ?? "").split("&").filter((p) => p !== "")) {
      const eq = pair.indexOf("=");
      const key = eq >= 0 ? pair.slice(0, eq) : pair;
      const value = eq >= 0 ? pair.slice(eq + 1) : "";
      const check = Object.hasOwn(SRT_OPTIONS, key) ? SRT_OPTIONS[key]! : undefined;
      if (!check) return fail(`srt option "${key.slice(0, 40)}" is not allowed; allowed: ${Object.keys(SRT_OPTIONS).join(", ")}`);
      if (options.some(([k]) => k === key)) return fail(`srt option "${key}" is given twice`);
      const problem = check(value);
      if (problem) return fail(`srt option ${key}: ${problem}`);
      options.push([key, value]);
    }
    const query = options.map(([k, v]) => `${k}=${v}`).join("&");
    return ok({ scheme, host, hostKind, port, userinfo, path: "", options, canonical: `srt://${authorityText}${query ? `?${query}` : ""}` });
  }

  // rtmp(s): an application and a stream name, at least `/app`.
  if (!/^\/[^/?#]/.test(rest)) return fail(`${scheme}:// needs an application and stream key: ${scheme}://host/app/streamkey`);
  return ok({ scheme: scheme as TargetScheme, host, hostKind, port, userinfo, path: rest, options: [], canonical: `${scheme}://${authorityText}${rest}` });
}

const ok = (url: TargetUrl): ParsedTargetUrl => ({ ok: true, url });

/**
 * The same url with its host replaced by an address the outbound policy checked, so the
 * connection goes where the check looked. Only for srt: SRT has no notion of the host name
 * (TLS's SNI and certificate check, and RTMP's tcUrl, do).
 */
export function withAddress(url: TargetUrl, address: string): string {
  if (url.scheme !== "srt") return url.canonical;
  const host = net.isIPv6(address) ? `[${address}]` : address;
  const query = url.options.map(([k, v]) => `${k}=${v}`).join("&");
  return `srt://${host}:${url.port}${query ? `?${query}` : ""}`;
}
