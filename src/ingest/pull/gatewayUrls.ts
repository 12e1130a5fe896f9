// The urls one pull may fetch through the source gateway (pure): its source, and what the
// playlists the gateway served it named. ffmpeg gets an id for each, never the url itself.

/** What an id stands for: a url to fetch, or one the gateway refuses (its scheme), answered 403. */
export type GatewayTarget = { url: string } | { refusedScheme: string };

/** Urls kept per pull (a live playlist names new segments all the time; the oldest are forgotten). */
export const DEFAULT_MAX_URLS = 4096;

/**
 * The last part of a url's path, as the gateway path ends with it (pure): ffmpeg's HLS demuxer
 * judges a segment by its extension. Characters outside `[A-Za-z0-9._-]` become `_`; at most
 * 80 of them, the end (the extension) kept.
 */
export function gatewayBasename(url: string): string {
  let name = "";
  try {
    name = decodeURIComponent(new URL(url).pathname.split("/").pop() ?? "");
  } catch {
    name = "";
  }
  name = name.replace(/[^A-Za-z0-9._-]/g, "_").slice(-80).replace(/^\.+/, "");
  return name === "" ? "media" : name;
}

/**
 * A bounded two-way map between ids and what they stand for. An id is never reused; a target
 * named again keeps its id and becomes the newest; past `max`, the least recently named is
 * dropped (ffmpeg asking for it then gets a 404).
 */
export class UrlIds {
  private readonly byId = new Map<string, GatewayTarget>();
  private readonly byKey = new Map<string, string>();
  private next = 1;

  constructor(private readonly max = DEFAULT_MAX_URLS) {}

  get size(): number {
    return this.byId.size;
  }

  /** The id of `target`, made if new. */
  idFor(target: GatewayTarget): string {
    const key = "url" in target ? `u ${target.url}` : `r ${target.refusedScheme}`;
    let id = this.byKey.get(key);
    if (id !== undefined) {
      // Newest again: delete and set moves it to the end of both maps' order.
      this.byId.delete(id);
      this.byKey.delete(key);
    } else {
      id = (this.next++).toString(36);
    }
    this.byId.set(id, target);
    this.byKey.set(key, id);
    while (this.byId.size > this.max) {
      const [oldId, old] = this.byId.entries().next().value as [string, GatewayTarget];
      this.byId.delete(oldId);
      this.byKey.delete("url" in old ? `u ${old.url}` : `r ${old.refusedScheme}`);
    }
    return id;
  }

  /** What `id` stands for, if it is known. */
  target(id: string): GatewayTarget | undefined {
    return this.byId.get(id);
  }
}
