import { z } from "zod";
import { expected } from "./messages";

// A stream's pull source (Livepeer's `pull`): onair connects to the url and ingests what it
// reads, instead of waiting for a push. The url is an argument of an ffmpeg this server runs,
// so it is parsed here (pure) and ffmpeg gets only what passed: ffmpeg reads more into a url
// than a browser would (`?mode=listener` makes an SRT "source" a server on a public port, a
// leading tab makes it a local file name).

export const PULL_SCHEMES = ["rtmp", "rtmps", "rtsp", "srt", "http", "https"] as const;
export type PullScheme = (typeof PULL_SCHEMES)[number];

export const MAX_PULL_SOURCE_LENGTH = 2048;
export const MAX_PULL_HEADERS = 20;

/** The SRT options a source may set (caller side only: onair never listens for a pull). */
const SRT_PULL_OPTIONS: Record<string, (v: string) => string | undefined> = {
  streamid: (v) => (v.length <= 512 ? undefined : "must be at most 512 characters"),
  passphrase: (v) => (v.length >= 10 && v.length <= 79 ? undefined : "must be 10 to 79 characters"),
  pbkeylen: (v) => (["16", "24", "32"].includes(v) ? undefined : "must be 16, 24 or 32"),
  latency: (v) => (/^\d{1,9}$/.test(v) ? undefined : "must be microseconds, a whole number"),
  mode: (v) => (v === "caller" ? undefined : "only mode=caller is allowed: onair connects to the source, it never listens"),
};

export interface PullSource {
  scheme: PullScheme;
  /** As the outbound policy checks it: a name (lower case), or an IP address without brackets. */
  host: string;
  port: number | undefined;
  /** The url for logs: no user name, password or query (they may hold credentials). */
  redacted: string;
}

export type ParsedPullSource = { ok: true; source: PullSource } | { ok: false; error: string };

// Printable ASCII without spaces: anything else is refused, never trimmed or encoded away.
const PRINTABLE = /^[\x21-\x7e]+$/;

/** A pull source url, checked (pure). */
export function parsePullSource(text: string): ParsedPullSource {
  const fail = (error: string): ParsedPullSource => ({ ok: false, error });
  if (text.length > MAX_PULL_SOURCE_LENGTH) return fail(`must be at most ${MAX_PULL_SOURCE_LENGTH} characters`);
  if (!PRINTABLE.test(text)) return fail("must be a url of printable characters, without spaces");
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (!scheme || !(PULL_SCHEMES as readonly string[]).includes(scheme)) return fail(`must be a ${PULL_SCHEMES.join(", ")} url`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail("is not a valid url");
  }
  // Non-special schemes (rtmp, rtsp, srt) keep the host's case: compare it in lower case.
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (host === "") return fail("needs a host");
  const port = url.port === "" ? undefined : Number(url.port);
  const kind = scheme as PullScheme;
  if (kind === "srt") {
    if (url.username || url.password) return fail("srt:// urls carry no user name or password (use passphrase=)");
    if (port === undefined) return fail("srt:// needs a port: srt://host:port");
    if (url.pathname !== "" && url.pathname !== "/") return fail("srt:// takes no path: srt://host:port?streamid=…");
    const seen = new Set<string>();
    for (const pair of url.search.slice(1).split("&").filter((p) => p !== "")) {
      const eq = pair.indexOf("=");
      const key = eq >= 0 ? pair.slice(0, eq) : pair;
      const check = Object.hasOwn(SRT_PULL_OPTIONS, key) ? SRT_PULL_OPTIONS[key]! : undefined;
      if (!check) return fail(`srt option "${key.slice(0, 40)}" is not allowed; allowed: ${Object.keys(SRT_PULL_OPTIONS).join(", ")}`);
      if (seen.has(key)) return fail(`srt option "${key}" is given twice`);
      seen.add(key);
      const problem = check(eq >= 0 ? pair.slice(eq + 1) : "");
      if (problem) return fail(`srt option ${key}: ${problem}`);
    }
  }
  if ((kind === "rtmp" || kind === "rtmps") && !/^\/[^/]/.test(url.pathname)) return fail(`${kind}:// needs an application and stream name: ${kind}://host/app/stream`);
  const shownHost = host.includes(":") ? `[${host}]` : host;
  // For logs: the path is left out, as multistream targets' are: an RTMP stream key, a signed
  // HLS path or an RTSP token lives there.
  return { ok: true, source: { scheme: kind, host, port, redacted: `${kind}://${shownHost}${port === undefined ? "" : `:${port}`}${url.pathname === "" || url.pathname === "/" ? "" : "/…"}` } };
}

/** Sources whose headers ffmpeg can send (HTTP, so HLS). */
export const takesHeaders = (scheme: PullScheme) => scheme === "http" || scheme === "https";

// RFC 9110 token characters for a header name; a value of visible characters, spaces and tabs
// (no CR or LF: one header cannot become two, or end the request's head).
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
const HEADER_VALUE = /^[\x20-\x7e\t]{0,4096}$/;

const location = z.object({
  lat: z.number(expected("a number")).min(-90).max(90),
  lon: z.number(expected("a number")).min(-180).max(180),
});

/** What a stream's `pull` is, as given (create, PATCH) and as shown back (the API, not webhooks). */
export const pullConfig = z
  .object({
    source: z.string(expected("a string")).describe(`the url onair reads: ${PULL_SCHEMES.join(", ")} (HTTP for HLS); it passes the outbound policy`),
    headers: z
      .record(z.string(), z.string(expected("a string")))
      .optional()
      .describe(`HTTP(S) sources only: request headers (at most ${MAX_PULL_HEADERS}), e.g. an Authorization`),
    isMobile: z.union([z.literal(0), z.literal(1), z.literal(2), z.boolean()]).optional().describe("kept and shown back; no effect"),
    location: location.optional().describe("kept and shown back; no effect"),
  })
  .superRefine((p, ctx) => {
    const parsed = parsePullSource(p.source);
    if (!parsed.ok) return ctx.addIssue({ code: "custom", path: ["source"], message: parsed.error });
    const headers = Object.entries(p.headers ?? {});
    if (headers.length === 0) return;
    if (!takesHeaders(parsed.source.scheme)) return ctx.addIssue({ code: "custom", path: ["headers"], message: `only http(s) sources take headers, not ${parsed.source.scheme}` });
    if (headers.length > MAX_PULL_HEADERS) ctx.addIssue({ code: "custom", path: ["headers"], message: `at most ${MAX_PULL_HEADERS} headers` });
    for (const [name, value] of headers) {
      if (!HEADER_NAME.test(name)) ctx.addIssue({ code: "custom", path: ["headers"], message: `"${name.slice(0, 40)}" is not a header name` });
      else if (!HEADER_VALUE.test(value)) ctx.addIssue({ code: "custom", path: ["headers", name], message: "must be at most 4096 printable characters, without line breaks" });
    }
  })
  .meta({ id: "Pull", description: "onair pulls the stream from this source while the stream is enabled, reconnecting with back-off." });

export type PullConfig = z.output<typeof pullConfig>;
