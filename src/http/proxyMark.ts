import crypto from "node:crypto";
import type { Request } from "express";

/**
 * Marks a request one node passed to another: it is answered there, never passed on again, and
 * counted there per playback id and node only (the node that passed it counted its client; for
 * WHEP offers, which only the answering node counts, PROXIED_CLIENT names it). The
 * mark's value is a key every node derives from the cluster's shared secret: a player that
 * sends the header with any other value is an ordinary player.
 */
export const PROXIED = "x-onair-proxied";

/**
 * The client address (clientKey) a node passing a request on counted it under, for the node
 * that answers it; believed only beside a valid PROXIED mark.
 */
export const PROXIED_CLIENT = "x-onair-proxied-client";

/** Whether a request carries this cluster's proxy mark (compared in constant time). */
export function markedProxied(req: Request, mark: string | undefined): boolean {
  const shown = req.get(PROXIED);
  if (mark === undefined || shown === undefined || shown.length !== mark.length) return false;
  return crypto.timingSafeEqual(Buffer.from(shown), Buffer.from(mark));
}

/**
 * Where a request is passed on: its path and query on `base`, never its own host. A client may
 * send its request target in absolute form (`GET http://elsewhere/…`), which Express routes by
 * the path alone; resolved against `base` as it comes, it would name that host, and the request
 * would leave with the proxy mark.
 */
export function passedUrl(originalUrl: string, base: string): URL {
  const { pathname, search } = new URL(originalUrl, "http://request.invalid");
  const url = new URL(base);
  url.pathname = pathname;
  url.search = search;
  return url;
}
