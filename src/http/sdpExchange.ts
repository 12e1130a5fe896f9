import express, { type NextFunction, type Request, type Response } from "express";

// What WHIP (RFC 9725) and WHEP share on the wire: an SDP offer POSTed, refusals as
// `{"errors": [...]}` with their headers, CORS for browsers on other origins.

export const OFFER_LIMIT_BYTES = 64 * 1024;

/** A refusal of a WHIP or WHEP request: its status, the `{"errors": [...]}` body, extra headers. */
export class SdpHttpError extends Error {
  constructor(
    readonly status: number,
    readonly errors: string[],
    readonly headers: Record<string, string> = {},
  ) {
    super(errors.join("; "));
  }
}

/** Reads an `application/sdp` body as text (other types are left for `offerOf` to refuse). */
export const readOffer = express.text({ type: "application/sdp", limit: OFFER_LIMIT_BYTES });

/** The request's SDP offer; `refuse(status, message)` makes the error the caller throws. */
export function offerOf(req: Request, what: string, refuse: (status: number, message: string) => Error): string {
  if (req.get("content-length") === "0" || (req.get("content-length") === undefined && req.get("transfer-encoding") === undefined)) {
    throw refuse(400, "the body must be an SDP offer (application/sdp)");
  }
  if (!req.is("application/sdp")) throw refuse(415, `content-type must be application/sdp (${what}), got ${req.get("content-type") ?? "none"}`);
  if (typeof req.body !== "string" || req.body === "") throw refuse(400, "the body must be an SDP offer");
  return req.body;
}

/** Every answer carries what CORS needs: browsers on any origin publish and play. */
export function cors(methods: string) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.set({
      "access-control-allow-origin": "*",
      "access-control-allow-methods": methods,
      "access-control-allow-headers": "Authorization, Content-Type, If-Match, Livepeer-Jwt, Livepeer-Access-Key",
      "access-control-expose-headers": "Location, ETag, Link, Accept-Post",
    });
    next();
  };
}

/** The answer's body: a Buffer, or Express would add a charset that WHIP and WHEP clients compare exactly. */
export function sendAnswer(res: Response, location: string, etag: string, answer: string, links: string[]): void {
  for (const link of links) res.append("link", link);
  res.status(201).set({ location, etag: `"${etag}"`, "content-type": "application/sdp" }).send(Buffer.from(answer));
}

/** The routers' error handler: their refusals, an oversized offer, malformed paths. */
export function sdpErrors(err: unknown, _req: Request, res: Response, next: NextFunction): void {
  if (err instanceof SdpHttpError) return void res.status(err.status).set(err.headers).json({ errors: err.errors });
  if ((err as { type?: unknown }).type === "entity.too.large") return void res.status(413).json({ errors: [`the offer is larger than ${OFFER_LIMIT_BYTES} bytes`] });
  // The router's own refusals (a path segment that is not valid percent-encoding): the client's fault.
  const status = (err as { status?: unknown }).status;
  if (typeof status === "number" && status >= 400 && status < 500) return void res.status(status).json({ errors: ["malformed request"] });
  next(err);
}
