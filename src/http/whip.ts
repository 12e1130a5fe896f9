import express, { type NextFunction, type Request, type Response } from "express";
import { WhipRefusal, type WhipIngest } from "../ingest";

// WHIP (RFC 9725) on the public port: POST /whip (Authorization: Bearer <stream key>) or
// POST /webrtc/<stream key> (Livepeer's form) with an SDP offer → 201, the answer and the
// resource's Location; DELETE on the resource ends the publish. No trickle ICE or ICE restart:
// PATCH is a 405 (RFC 9725 §4.3 lets a server refuse it; OBS never sends it).

const OFFER_LIMIT_BYTES = 64 * 1024;

/** A refusal of a WHIP request: its status, the `{"errors": [...]}` body, extra headers. */
class WhipHttpError extends Error {
  constructor(
    readonly status: number,
    readonly errors: string[],
    readonly headers: Record<string, string> = {},
  ) {
    super(errors.join("; "));
  }
}

export interface WhipRoutesDeps {
  /** Undefined on a node without the ingest role. */
  whip: WhipIngest | undefined;
  /** `Link` values of the configured ICE servers, with TURN credentials (the 201 only). */
  iceLinks: string[];
  /** The same without credentials, for anyone who asks (OPTIONS). */
  publicIceLinks: string[];
  /** The live state of a stream for the resource's GET (the broadcast page's indicator). */
  streamState(streamId: string): { isActive: boolean; isHealthy?: boolean; issues?: string[] };
}

/** Browsers on other origins publish too: every answer carries what CORS needs. */
function cors(_req: Request, res: Response, next: NextFunction): void {
  res.set({
    "access-control-allow-origin": "*",
    "access-control-allow-methods": "POST, GET, DELETE, PATCH, OPTIONS",
    "access-control-allow-headers": "Authorization, Content-Type, If-Match",
    "access-control-expose-headers": "Location, ETag, Link, Accept-Post",
  });
  next();
}

const RESOURCE_ALLOW = "GET, DELETE, OPTIONS";

export function whipRouter(deps: WhipRoutesDeps): express.Router {
  const router = express.Router();
  router.use(["/whip", "/webrtc"], cors);

  const endpointOptions = (_req: Request, res: Response) => {
    // Unauthenticated (a CORS preflight carries no Authorization): no TURN credentials here.
    for (const link of deps.publicIceLinks) res.append("link", link);
    res.set({ allow: "POST, OPTIONS", "accept-post": "application/sdp" }).status(204).end();
  };
  router.options("/whip", endpointOptions);
  router.options("/webrtc/:key", endpointOptions);

  const readOffer = express.text({ type: "application/sdp", limit: OFFER_LIMIT_BYTES });
  const publish = (keyOf: (req: Request) => string | undefined) => async (req: Request, res: Response) => {
    if (req.get("content-length") === "0" || (req.get("content-length") === undefined && req.get("transfer-encoding") === undefined)) {
      throw new WhipHttpError(400, ["the body must be an SDP offer (application/sdp)"]);
    }
    if (!req.is("application/sdp")) {
      throw new WhipHttpError(415, [`content-type must be application/sdp (a WHIP offer), got ${req.get("content-type") ?? "none"}`]);
    }
    const key = keyOf(req);
    if (!key) throw new WhipHttpError(401, ["missing stream key: send `Authorization: Bearer <stream key>` or POST to /webrtc/<stream key>"]);
    if (!deps.whip) throw new WhipHttpError(503, ["this node does not take publishes (ONAIR_ROLES has no ingest): send WHIP to an ingest node"]);
    if (typeof req.body !== "string" || req.body === "") throw new WhipHttpError(400, ["the body must be an SDP offer"]);
    try {
      const whip = deps.whip;
      const { id, answer } = await whip.publish(key, req.body);
      res.once("finish", () => whip.answered(id));
      for (const link of deps.iceLinks) res.append("link", link);
      // A Buffer: Express would add a charset to a string's content type, which WHIP clients compare exactly.
      res.status(201).set({ location: `/whip/${id}`, etag: `"${id}"`, "content-type": "application/sdp" }).send(Buffer.from(answer));
    } catch (err) {
      if (err instanceof WhipRefusal) throw new WhipHttpError(err.status, [err.message], err.status === 503 ? { "retry-after": "5" } : {});
      throw err;
    }
  };
  const bearer = (req: Request) => /^Bearer\s+(\S+)\s*$/i.exec(req.get("authorization") ?? "")?.[1];
  router.post("/whip", readOffer, publish(bearer));
  router.post("/webrtc/:key", readOffer, publish((req) => String(req.params.key)));

  const resource = (req: Request) => {
    const status = deps.whip?.status(String(req.params.id));
    if (!status) throw new WhipHttpError(404, ["no such WHIP session: it ended, or never existed"]);
    return status;
  };
  router.options("/whip/:id", (_req, res) => void res.set({ allow: RESOURCE_ALLOW }).status(204).end());
  router.get("/whip/:id", (req, res) => {
    const s = resource(req);
    res.json({ ...s, ...deps.streamState(s.streamId) });
  });
  router.delete("/whip/:id", (req, res) => {
    resource(req);
    deps.whip!.end(String(req.params.id));
    res.status(200).end();
  });
  router.patch("/whip/:id", () => {
    throw new WhipHttpError(405, ["trickle ICE and ICE restarts are not supported: publish again with a new offer (POST)"], { allow: RESOURCE_ALLOW });
  });
  // Anything else on the endpoints: which methods there are.
  router.all(["/whip", "/webrtc/:key"], (req) => {
    throw new WhipHttpError(405, [`method ${req.method} is not allowed here; allowed: POST, OPTIONS`], { allow: "POST, OPTIONS" });
  });
  router.all("/whip/:id", (req) => {
    throw new WhipHttpError(405, [`method ${req.method} is not allowed here; allowed: ${RESOURCE_ALLOW}`], { allow: RESOURCE_ALLOW });
  });
  router.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (err instanceof WhipHttpError) return void res.status(err.status).set(err.headers).json({ errors: err.errors });
    if ((err as { type?: unknown }).type === "entity.too.large") return void res.status(413).json({ errors: [`the offer is larger than ${OFFER_LIMIT_BYTES} bytes`] });
    // The router's own refusals (a path segment that is not valid percent-encoding): the client's fault.
    const status = (err as { status?: unknown }).status;
    if (typeof status === "number" && status >= 400 && status < 500) return void res.status(status).json({ errors: ["malformed request"] });
    next(err);
  });
  return router;
}
