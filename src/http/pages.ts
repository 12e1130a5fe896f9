import path from "node:path";
import type express from "express";
import type { Response } from "express";

// What the player page and the dashboard share: HTML escaping, the page shell, the static
// assets under /assets (top-level public/, which sits at the same place relative to src/http
// and to a build in dist/http).

const PUBLIC_DIR = path.resolve(__dirname, "../../public");

/** A stream or session id (newId's UUID): anything else in a page's path or query names nothing. */
export const OBJECT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Everything put into HTML goes through this: text and attribute values alike. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

export interface Page {
  title: string;
  /** Already escaped HTML. */
  body: string;
  /** Script files under /assets, loaded at the end of the body in this order. */
  scripts: string[];
  bodyClass: string;
}

export function renderPage(page: Page): string {
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(page.title)}</title>`,
    '<link rel="stylesheet" href="/assets/onair.css">',
    // No favicon request (and no 404 in the console) for every page view.
    '<link rel="icon" href="data:,">',
    "</head>",
    `<body class="${escapeHtml(page.bodyClass)}">`,
    page.body,
    ...page.scripts.map((s) => `<script src="/assets/${escapeHtml(s)}"></script>`),
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

// No inline script anywhere, so scripts may come from this origin only: a stream name that
// slipped through escaping still could not run. hls.js starts its worker from a blob: URL and
// plays through MediaSource (blob: media).
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "media-src 'self' blob:",
  "worker-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
].join("; ");

export function sendPage(res: Response, status: number, html: string, opts: { framable: boolean }): void {
  res
    .status(status)
    .set({
      "content-type": "text/html; charset=utf-8",
      // Pages reflect live state (the stream's name, whether it exists): always revalidate.
      "cache-control": "no-cache",
      "content-security-policy": `${CSP}; frame-ancestors ${opts.framable ? "*" : "'none'"}`,
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin",
    })
    .send(html);
}

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/**
 * GET /assets/<name> → `file` (absolute, or relative to public/). A fixed list of names: no
 * request path ever reaches the file system. Short caching: a new version shows within minutes
 * and the ETag makes the revalidation cheap.
 */
export function serveAsset(router: express.Router, name: string, file: string): void {
  const absolute = path.resolve(PUBLIC_DIR, file);
  router.get(`/assets/${name}`, (_req, res) => {
    res.sendFile(absolute, {
      headers: { "content-type": TYPES[path.extname(absolute)]!, "cache-control": "public, max-age=300", "x-content-type-options": "nosniff" },
      cacheControl: false,
    }, (err) => {
      if (err && !res.headersSent) res.status(404).json({ errors: ["not found"] });
    });
  });
}
