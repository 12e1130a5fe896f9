import { unprocessable } from "./errors";

// Cursors are opaque to clients (base64url), but stand for the seq of the last item served.

export function encodeCursor(seq: number): string {
  return Buffer.from(`s${seq}`).toString("base64url");
}

export function decodeCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined || cursor === "") return undefined;
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const match = /^s(\d{1,15})$/.exec(text);
  if (!match) throw unprocessable("cursor: not a cursor this API issued (take it from the Link header)");
  return Number(match[1]);
}

/**
 * The `Link` header for the next page: the URL as the client requested it, with its other
 * parameters (limit, filters) kept and the cursor replaced (docs/api.md#spec-43-multistream-targets rule 4).
 */
export function nextPageLink(requestUrl: string, nextSeq: number | null): string | undefined {
  if (nextSeq === null) return undefined;
  const url = new URL(requestUrl);
  url.searchParams.set("cursor", encodeCursor(nextSeq));
  return `<${url.toString()}>; rel="next"`;
}
