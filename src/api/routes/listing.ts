import type { Request } from "express";
import type { Page } from "../../db";
import { nextPageLink } from "../pagination";
import type { RouteResult } from "../route";

/** The absolute URL the client asked for, as it addressed this server. */
export function requestUrl(req: Request): string {
  return `${req.protocol}://${req.get("host") ?? "localhost"}${req.originalUrl}`;
}

/** A 200 with one page of items and, when more exist, the `Link` header to the next page. */
export async function pageResult<T>(req: Request, page: Page<T> | Promise<Page<T>>, present: (item: T) => unknown): Promise<RouteResult> {
  const { items, nextSeq } = await page;
  const link = nextPageLink(requestUrl(req), nextSeq);
  const body: unknown[] = [];
  for (const item of items) body.push(await present(item));
  return { status: 200, body, headers: link ? { link } : undefined };
}
