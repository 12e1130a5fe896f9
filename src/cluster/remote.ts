import type { Store } from "../db";

/** How long where a playback id is live is remembered: a viewer's requests come every part. */
const TTL_MS = 1000;

/**
 * Where a stream's live HLS is packaged when it is not here: the internal URL of the node that
 * holds the stream's lease, or undefined (not live, or live here). LL-HLS is served from the
 * packaging node's memory; any other node proxies to it (src/http/hls.ts).
 */
export function remoteLiveNode(store: Store, selfId: string): (playbackId: string) => Promise<string | undefined> {
  const cache = new Map<string, { at: number; url: string | undefined }>();
  return async (playbackId) => {
    const now = Date.now();
    const hit = cache.get(playbackId);
    if (hit && now - hit.at < TTL_MS) return hit.url;
    let url: string | undefined;
    const stream = await store.streams.getByPlaybackId(playbackId);
    const holder = stream && (await store.nodes.holder(stream.id));
    if (holder && holder !== selfId) url = (await store.nodes.get(holder))?.internalUrl ?? undefined;
    if (cache.size > 10_000) cache.clear();
    cache.set(playbackId, { at: now, url });
    return url;
  };
}
