// Why a push failed, in words for the multistream.error payload and the log, as pure functions.
// A target's url carries the destination's stream key (or an SRT streamid/passphrase): no
// text that leaves this module may contain it.

import type { RtmpError } from "../rtmp";
import { parseTargetUrl } from "./targetUrl";

export interface PushFailure {
  /** One line for people: what went wrong with the destination, never its url. */
  reason: string;
  /** Retrying cannot help (this ffmpeg cannot speak the protocol). */
  permanent: boolean;
}

interface ParsedUrl {
  scheme: string;
  /** host[:port] */
  host: string;
  /** Parts of the url that may be secret: path segments, query values, credentials. */
  secrets: string[];
}

function parseDestination(url: string): ParsedUrl {
  const scheme = url.slice(0, Math.max(0, url.indexOf(":"))).toLowerCase() || "rtmp";
  const parsed = parseTargetUrl(url);
  let host: string;
  let pieces: string[];
  if (parsed.ok) {
    const u = parsed.url;
    host = `${u.hostKind === "ipv6" ? `[${u.host}]` : u.host}${u.port !== undefined ? `:${u.port}` : ""}`;
    // rtmp: every part of the path and query (a stream key may sit in either); srt: the option
    // values (streamid, passphrase); and any credentials.
    pieces = [...u.path.split(/[/?&=#]/), ...u.options.map(([, v]) => v), ...(u.userinfo ?? "").split(":")];
  } else {
    try {
      const u = new URL(url);
      host = u.host;
      pieces = [...u.pathname.split("/"), ...u.searchParams.values(), u.username, u.password];
    } catch {
      return { scheme, host: "the destination", secrets: [] };
    }
  }
  const decoded = pieces.flatMap((p) => {
    try {
      return [p, decodeURIComponent(p)];
    } catch {
      return [p];
    }
  });
  // Short pieces (`app`, `live2`) are not secrets, and would garble ordinary words if cut.
  const secrets = [...new Set(decoded.filter((p) => p.length >= 6))].sort((a, b) => b.length - a.length);
  return { scheme, host, secrets };
}

/** `text` with the destination url (and any secret part of it) replaced by `scheme://host/…`. */
export function redactDestination(text: string, destination: string): string {
  const d = parseDestination(destination);
  let out = text.split(destination).join(`${d.scheme}://${d.host}/…`);
  for (const s of d.secrets) out = out.split(s).join("…");
  return out;
}

/** `[rtmp @ 0x55d0…] Cannot open…` → `Cannot open…` */
const withoutContext = (line: string) => line.replace(/^\[[^\]]* @ 0x[0-9a-f]+\]\s*/i, "").trim();

/**
 * What ffmpeg's last stderr lines say about a failed push. `connected`: media had been going
 * out, so the same symptom (an I/O error) means a dropped connection rather than a refusal.
 * Checked in order: the first rule whose pattern appears anywhere in the tail wins.
 */
export function describePushFailure(
  stderrTail: string[],
  destination: string,
  o: { connected: boolean; code: number | null; signal: NodeJS.Signals | null },
): PushFailure {
  const d = parseDestination(destination);
  const text = stderrTail.join("\n");
  const has = (re: RegExp) => re.exec(text);
  let m: RegExpExecArray | null;

  if (has(/Protocol not found|Unknown protocol|Protocol not on whitelist/i)) {
    const lib = d.scheme === "srt" ? " (it needs ffmpeg built with libsrt)" : d.scheme === "rtmps" ? " (it needs ffmpeg built with TLS)" : "";
    return { reason: `this server's ffmpeg cannot push ${d.scheme}://${lib}`, permanent: true };
  }
  if ((m = has(/Failed to resolve hostname ([^\s:]+)/))) return { reason: `cannot resolve host ${m[1]}`, permanent: false };
  if (has(/Connection refused/)) return { reason: `connection refused by ${d.host}`, permanent: false };
  if (has(/No route to host|Network is unreachable|Host is unreachable/)) return { reason: `${d.host} is unreachable`, permanent: false };
  if ((m = has(/Server error: (.+)/))) {
    return { reason: `${d.host} refused the stream: ${redactDestination(m[1]!.trim(), destination).slice(0, 200)}`, permanent: false };
  }
  if (has(/Connection timed out/)) {
    return {
      reason: o.connected ? `${d.host} stopped taking media (nothing sent for 10 s)` : `no answer from ${d.host} within 10 s`,
      permanent: false,
    };
  }
  if (d.scheme === "srt" && has(/Connection to srt:.* failed/) && !o.connected) {
    // libsrt reports a caller that got no answer, or was rejected, as a bare I/O error.
    return { reason: `no SRT listener at ${d.host} took the connection (check the url and streamid)`, permanent: false };
  }
  if (has(/certificate failed verification|certificate verify failed|Certificate .*(expired|not trusted|revoked)|hostname mismatch/i) && !o.connected) {
    return { reason: `the TLS certificate of ${d.host} failed verification (a target whose destination has no publicly trusted certificate may set "tlsVerify": false)`, permanent: false };
  }
  if (has(/TLS|tls @|certificate|GnuTLS|SSL/) && !o.connected) return { reason: `TLS handshake with ${d.host} failed`, permanent: false };
  if (has(/Broken pipe|Connection reset by peer|End of file|Input\/output error/)) {
    return {
      reason: o.connected
        ? `${d.host} dropped the connection`
        : `${d.host} closed the connection before taking the stream (check the url and stream key)`,
      permanent: false,
    };
  }
  const last = [...stderrTail].reverse().map(withoutContext).find((l) => l.length > 0);
  if (last) return { reason: redactDestination(last, destination).slice(0, 200), permanent: false };
  return { reason: o.signal ? `ffmpeg was killed (${o.signal})` : `ffmpeg exited with code ${o.code}`, permanent: false };
}

/**
 * What onair's own RTMP client's failure (src/rtmp) means for a push, in the same words as
 * ffmpeg's failures above, so a user sees one vocabulary whichever side did the network part.
 * A refusal by the server (its onStatus or _error) is not permanent, as ffmpeg's "Server error"
 * is not: ingest services refuse a key that is not live yet, and accept it minutes later.
 */
export function describeRtmpFailure(err: RtmpError, destination: string, o: { connected: boolean; timeoutMs?: number }): PushFailure {
  const { host } = parseDestination(destination);
  const waited = `${(o.timeoutMs ?? 10_000) / 1000} s`;
  switch (err.kind) {
    case "refused":
      return { reason: `connection refused by ${host}`, permanent: false };
    case "unreachable":
      return { reason: `${host} is unreachable`, permanent: false };
    case "timeout":
      return { reason: o.connected ? `${host} stopped taking media (nothing sent for ${waited})` : `no answer from ${host} within ${waited}`, permanent: false };
    case "tls-certificate":
      return { reason: `the TLS certificate of ${host} failed verification (a target whose destination has no publicly trusted certificate may set "tlsVerify": false)`, permanent: false };
    case "tls":
      return { reason: `TLS handshake with ${host} failed`, permanent: false };
    case "rejected": {
      const said = err.status ? [err.status.code, err.status.description].filter((x) => x).join(": ") : err.message;
      return { reason: `${host} refused the stream: ${redactDestination(said || "no reason given", destination).slice(0, 200)}`, permanent: false };
    }
    case "protocol":
      return { reason: `${host} does not speak RTMP (check the url's scheme and port)`, permanent: false };
    case "closed":
      return {
        reason: o.connected || err.stage === "streaming" ? `${host} dropped the connection` : `${host} closed the connection before taking the stream (check the url and stream key)`,
        permanent: false,
      };
  }
}

/**
 * A relayed push's ffmpeg failed: it only reads the local source or rendition and writes to
 * onair, so its stderr is about the input (the destination is onair's own client's business).
 */
export function describeRelayInputFailure(stderrTail: string[], secrets: string[], o: { code: number | null; signal: NodeJS.Signals | null }): PushFailure {
  const last = [...stderrTail].reverse().map(withoutContext).find((l) => l.length > 0);
  if (!last) return { reason: o.signal ? `ffmpeg was killed (${o.signal})` : `ffmpeg exited with code ${o.code}`, permanent: false };
  const redacted = secrets.reduce((text, s) => redactDestination(text, s), last);
  return { reason: `reading the stream to push failed: ${redacted.slice(0, 200)}`, permanent: false };
}
