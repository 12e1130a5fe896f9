// Query parameters added to the URIs a playlist names (pure). Players resolve a playlist's URIs
// against the playlist's own URL with its query dropped, so whatever must travel with a
// playback (a signature, a viewer's token) is written into every URI of every playlist served.

/** What kind of resource a URI names, from where it stands in the playlist. */
export type UriRole = "playlist" | "media";

/** Tags whose URI="…" names a playlist; every other URI attribute names media (map, part, preload hint, key). */
const PLAYLIST_TAGS = /^#EXT-X-(MEDIA|I-FRAME-STREAM-INF|RENDITION-REPORT):/;

/**
 * `playlist` with `query(role)` (a `name=value` string, or undefined to leave a URI alone)
 * appended to each URI: lines after EXT-X-STREAM-INF are playlists, other URI lines media
 * segments; URI attributes by their tag.
 */
export function addUriQuery(playlist: string, query: (role: UriRole) => string | undefined): string {
  const add = (uri: string, role: UriRole) => {
    const q = query(role);
    return q === undefined ? uri : `${uri}${uri.includes("?") ? "&" : "?"}${q}`;
  };
  let nextIsVariant = false;
  return playlist
    .split("\n")
    .map((line) => {
      const trimmed = line.trim();
      if (trimmed === "") return line;
      if (!trimmed.startsWith("#")) {
        const role: UriRole = nextIsVariant ? "playlist" : "media";
        nextIsVariant = false;
        return add(trimmed, role);
      }
      if (trimmed.startsWith("#EXT-X-STREAM-INF:")) nextIsVariant = true;
      const role: UriRole = PLAYLIST_TAGS.test(trimmed) ? "playlist" : "media";
      return line.replace(/URI="([^"]*)"/g, (_m, uri: string) => `URI="${add(uri, role)}"`);
    })
    .join("\n");
}
