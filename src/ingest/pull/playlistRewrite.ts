// What the source gateway does to a body before ffmpeg sees it (pure). ffmpeg's HLS demuxer opens
// every url a playlist names itself, on any host; so every such url is replaced by one of the
// gateway's, which fetches it only once the outbound policy allowed its host. The rules follow
// ffmpeg 5.1's own reading of a playlist (libavformat/hls.c, ff_parse_key_value, ff_get_line), so
// that nothing ffmpeg would take for a url is left as it was.

/** How the gateway treats a body, from its first bytes. */
export type BodyKind =
  /** An HLS playlist: rewritten (`skip` bytes of ID3 tags before it are dropped). */
  | { kind: "playlist"; skip: number }
  /** A format that names further urls and is not read by onair: refused. */
  | { kind: "refused"; what: string }
  /** Media (or anything else): passed through as it is. */
  | { kind: "media" }
  /** Not enough bytes yet to tell. */
  | { kind: "more" };

/** Bytes the gateway reads at most to tell a body's kind (ID3 tags before a playlist included). */
export const SNIFF_LIMIT = 1 << 20;

/**
 * The length of the ID3v2 tags at the start of `b`, or undefined when the header is cut off.
 * avformat_open_input skips them before any demuxer reads, so a playlist may hide behind them.
 */
function id3Length(b: Buffer): number | undefined {
  let at = 0;
  while (b.length >= at + 3 && b.toString("latin1", at, at + 3) === "ID3") {
    if (b.length < at + 10) return undefined;
    const size = ((b[at + 6]! & 0x7f) << 21) | ((b[at + 7]! & 0x7f) << 14) | ((b[at + 8]! & 0x7f) << 7) | (b[at + 9]! & 0x7f);
    // Flag 0x10: a footer of 10 more bytes.
    at += 10 + size + (b[at + 5]! & 0x10 ? 10 : 0);
  }
  return at;
}

/**
 * The kind of a body from its first bytes (pure); `ended` when `head` is the whole body. A
 * playlist is told by `#EXTM3U` at its start (after ID3 tags, a byte-order mark or white space:
 * a superset of what ffmpeg reads as one); an ffconcat script and a DASH manifest are refused
 * (ffmpeg's format whitelist refuses them too; here the pull's status can say why).
 */
export function bodyKind(head: Buffer, ended: boolean): BodyKind {
  const skip = id3Length(head);
  // A whole body cut inside its ID3 header is no playlist: media (ffmpeg finds nothing in it).
  if (skip === undefined && ended) return { kind: "media" };
  if (skip === undefined || (skip > 0 && head.length < skip + 16 && !ended)) return head.length >= SNIFF_LIMIT ? { kind: "refused", what: "a body whose ID3 tags are too large to look behind" } : { kind: "more" };
  const text = head.subarray(skip, skip + 1024).toString("latin1").replace(/^(\xef\xbb\xbf|\s)+/, "");
  if (text.length < 16 && !ended && head.length - skip < 1024) return { kind: "more" };
  if (text.startsWith("#EXTM3U")) return { kind: "playlist", skip };
  if (/^ffconcat\b/i.test(text)) return { kind: "refused", what: "an ffconcat script" };
  if (/^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*<MPD\b/.test(text)) return { kind: "refused", what: "a DASH manifest" };
  return { kind: "media" };
}

/** A url a playlist named, as the gateway will serve it: an http(s) url, or why not. */
export type NamedUrl = { ok: true; url: string } | { ok: false; scheme: string; uri: string };

/** `uri` resolved against the playlist's own url (pure): only http and https are served. */
export function resolveNamed(uri: string, base: string): NamedUrl {
  let url: URL;
  try {
    url = new URL(uri, base);
  } catch {
    return { ok: false, scheme: "unreadable", uri };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, scheme: url.protocol, uri };
  url.hash = "";
  return { ok: true, url: url.href };
}

/** A key=value pair of a tag's attribute list, where its value sits in the line. */
interface Attribute {
  key: string;
  /** Where the pair's value starts and ends (quotes included). */
  from: number;
  to: number;
  value: string;
}

/**
 * A tag's attribute list as ffmpeg's ff_parse_key_value reads it (pure): pairs apart by commas
 * or white space, a value quoted (a backslash escapes the next character) or bare up to a comma
 * or white space.
 */
export function attributes(list: string, offset = 0): Attribute[] {
  const out: Attribute[] = [];
  let i = 0;
  for (;;) {
    while (i < list.length && /[\s,]/.test(list[i]!)) i++;
    if (i >= list.length) return out;
    const eq = list.indexOf("=", i);
    if (eq < 0) return out;
    const key = list.slice(i, eq);
    let j = eq + 1;
    let value = "";
    if (list[j] === '"') {
      j++;
      while (j < list.length && list[j] !== '"') {
        if (list[j] === "\\") {
          if (j + 1 >= list.length) break;
          value += list[j + 1];
          j += 2;
        } else value += list[j++];
      }
      if (list[j] === '"') j++;
    } else {
      while (j < list.length && !/[\s,]/.test(list[j]!)) value += list[j++];
    }
    out.push({ key, from: offset + eq + 1, to: offset + j, value });
    i = j;
  }
}

/** What the rewrite asks of the gateway for each url a playlist names. */
export type UrlFor = (named: NamedUrl) => string;

/**
 * The playlist ffmpeg gets (pure): every url line and every attribute whose name ends in `URI`
 * (EXT-X-KEY, -MAP, -MEDIA, -I-FRAME-STREAM-INF, -PART, -PRELOAD-HINT, -RENDITION-REPORT,
 * -SESSION-DATA, -SESSION-KEY, a SERVER-URI) replaced by `urlFor` of it resolved against `base`.
 * ffmpeg ends a line at CR, LF or NUL and takes any line not starting with `#` (white space too)
 * for a url: NUL splits lines here as well, and blank lines are dropped.
 */
export function rewritePlaylist(text: string, base: string, urlFor: UrlFor): string {
  const out: string[] = [];
  for (const line of text.split(/\r\n|\r|\n|\0/)) {
    if (line.trim() === "") continue;
    if (!line.startsWith("#")) {
      out.push(urlFor(resolveNamed(line.trim(), base)));
      continue;
    }
    const colon = line.indexOf(":");
    if (!line.startsWith("#EXT") || colon < 0) {
      out.push(line);
      continue;
    }
    let rewritten = line;
    // Right to left, so that the positions of the pairs not yet replaced still hold.
    for (const a of attributes(line.slice(colon + 1), colon + 1).reverse()) {
      if (!/URI$/i.test(a.key.trim())) continue;
      rewritten = `${rewritten.slice(0, a.from)}"${urlFor(resolveNamed(a.value, base))}"${rewritten.slice(a.to)}`;
    }
    out.push(rewritten);
  }
  return out.join("\n") + "\n";
}
