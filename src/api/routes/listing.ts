import type { Request } from "express";
import type { Page } from "../../db";
import { nextPageLink } from "../pagination";
import type { RouteResult } from "../route";

/** The absolute URL the client asked for, as it addressed this server. */
export function requestUrl(req: Request): string {
  return `${req.protocol}://${req.get("host") ?? "localhost"}${req.originalUrl}`;
}

/** A 200 with one page of items and, when more exist, the `Link` header to the next page. */
export function pageResult<T>(req: Request, page: Page<T>, present: (item: T) => unknown): RouteResult {
  const link = nextPageLink(requestUrl(req), page.nextSeq);
  return { status: 200, body: page.items.map(present), headers: link ? { link } : undefined };
}
