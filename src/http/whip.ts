import express, { type Request, type Response } from "express";
import { WhipRefusal, type WhipIngest } from "../ingest";
import { cors, offerOf, readOffer, SdpHttpError, sdpErrors, sendAnswer } from "./sdpExchange";

// WHIP (RFC 9725) on the public port: POST /whip (Authorization: Bearer <stream key>) or
// POST /webrtc/<stream key> (Livepeer's form) with an SDP offer → 201, the answer and the
// resource's Location; DELETE on the resource ends the publish. No trickle ICE or ICE restart:
// PATCH is a 405 (RFC 9725 §4.3 lets a server refuse it; OBS never sends it).

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

const RESOURCE_ALLOW = "GET, DELETE, OPTIONS";

export function whipRouter(deps: WhipRoutesDeps): express.Router {
  const router = express.Router();
  router.use(["/whip", "/webrtc"], cors("POST, GET, DELETE, PATCH, OPTIONS"));

  const endpointOptions = (_req: Request, res: Response) => {
    // Unauthenticated (a CORS preflight carries no Authorization): no TURN credentials here.
    for (const link of deps.publicIceLinks) res.append("link", link);
    res.set({ allow: "POST, OPTIONS", "accept-post": "application/sdp" }).status(204).end();
  };
  router.options("/whip", endpointOptions);
  router.options("/webrtc/:key", endpointOptions);

  const publish = (keyOf: (req: Request) => string | undefined) => async (req: Request, res: Response) => {
    // The key first: a request without a valid one is a 401 whatever its body (RFC 9725 §4.5).
    const key = keyOf(req);
    if (!key) throw new SdpHttpError(401, ["missing stream key: send `Authorization: Bearer <stream key>` or POST to /webrtc/<stream key>"]);
    if (!deps.whip) throw new SdpHttpError(503, ["this node does not take publishes (ONAIR_ROLES has no ingest): send WHIP to an ingest node"]);
    const offer = () => offerOf(req, "a WHIP offer", (status, message) => new WhipRefusal(status, message));
    try {
      const whip = deps.whip;
      const { id, answer } = await whip.publish(key, offer);
      res.once("finish", () => whip.answered(id));
      sendAnswer(res, `/whip/${id}`, id, answer, deps.iceLinks);
    } catch (err) {
      if (err instanceof WhipRefusal) throw new SdpHttpError(err.status, [err.message], err.status === 503 ? { "retry-after": "5" } : {});
      throw err;
    }
  };
  const bearer = (req: Request) => /^Bearer\s+(\S+)\s*$/i.exec(req.get("authorization") ?? "")?.[1];
  router.post("/whip", readOffer, publish(bearer));
  router.post("/webrtc/:key", readOffer, publish((req) => String(req.params.key)));

  const resource = (req: Request) => {
    const status = deps.whip?.status(String(req.params.id));
    if (!status) throw new SdpHttpError(404, ["no such WHIP session: it ended, or never existed"]);
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
    throw new SdpHttpError(405, ["trickle ICE and ICE restarts are not supported: publish again with a new offer (POST)"], { allow: RESOURCE_ALLOW });
  });
  // Anything else on the endpoints: which methods there are.
  router.all(["/whip", "/webrtc/:key"], (req) => {
    throw new SdpHttpError(405, [`method ${req.method} is not allowed here; allowed: POST, OPTIONS`], { allow: "POST, OPTIONS" });
  });
  router.all("/whip/:id", (req) => {
    throw new SdpHttpError(405, [`method ${req.method} is not allowed here; allowed: ${RESOURCE_ALLOW}`], { allow: RESOURCE_ALLOW });
  });
  router.use(sdpErrors);
  return router;
}
