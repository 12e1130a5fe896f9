import type { NextFunction, Request, Response } from "express";

/**
 * Error middleware for the media routers: a URL whose segment is not valid percent-encoding
 * (`/hls/%ZZ/index.m3u8`) names no file, so it is the same 404 as any other missing one. The
 * router reports it as a URIError with status 400 while matching params, before any handler.
 */
export function malformedPathIsNotFound(err: unknown, _req: Request, res: Response, next: NextFunction): void {
  if (err instanceof URIError && (err as { status?: unknown }).status === 400 && !res.headersSent) {
    res.status(404).json({ errors: ["not found"] });
    return;
  }
  next(err);
}
