import express, { type Request, type Response } from "express";
import type { Credentials, PlaybackGate, PlaybackSubject } from "../playback";
import { WhepRefusal, type WhepPlayback } from "../realtime";
import { markedProxied, passedUrl, PROXIED, PROXIED_CLIENT } from "./proxyMark";
import { clientKey } from "./hls";
import { cors, offerOf, readOffer, SdpHttpError, sdpErrors, sendAnswer } from "./sdpExchange";

// WHEP (draft-ietf-wish-whep) on the public port: POST /whep/<playbackId> with an SDP offer →
// 201, the answer and the viewer's Location; GET on it tells how the viewer is served, DELETE
// ends it. Who may watch is the HLS gate's answer (jwt, access key, webhook policy). No trickle
// ICE or ICE restart: PATCH is a 405, the player offers again. On several nodes, a request for a
// stream another node packages is passed to it (signalling only: the media goes direct).

const PLAYBACK_ID = /^[0-9a-z]{16}$/;
const RESOURCE_ALLOW = "GET, DELETE, OPTIONS";

export interface WhepRoutesDeps {
  /** Undefined when WebRTC playback is off (WEBRTC_PLAYBACK=false). */
  whep: WhepPlayback | undefined;
  gate: PlaybackGate;
  subject(playbackId: string): Promise<PlaybackSubject | undefined>;
  /** `Link` values of the configured ICE servers, with TURN credentials (the 201, and OPTIONS for a live stream). */
  iceLinks: string[];
  /** The same without credentials (OPTIONS for anything else). */
  publicIceLinks: string[];
  /** Where a stream live on another node is packaged (several nodes): its internal URL; the cluster's proxy mark. */
  remote?: { find(playbackId: string): Promise<string | undefined>; mark: string };
}

/** What a passed-on WHEP answer keeps. */
const PASSED_HEADERS = ["content-type", "location", "etag", "link", "retry-after", "cache-control"];

/**
 * Passes a WHEP request to the node packaging the stream and its answer back: signalling only.
 * The answer names that node's candidates, so the media flows between it and the player.
 */
async function passOn(req: Request, res: Response, base: string, mark: string): Promise<void> {
  // The player's address goes along: the answering node caps offers per address, as this one would.
  const headers: Record<string, string> = { [PROXIED]: mark, [PROXIED_CLIENT]: clientKey(req.ip ?? "") };
  for (const h of ["content-type", "authorization", "livepeer-jwt", "livepeer-access-key"]) {
    const v = req.get(h);
    if (v !== undefined) headers[h] = v;
  }
  let up: globalThis.Response;
  try {
    up = await fetch(passedUrl(req.originalUrl, base), { method: req.method, headers, ...(typeof req.body === "string" ? { body: req.body } : {}), signal: AbortSignal.timeout(15_000) });
  } catch {
    throw new SdpHttpError(502, ["the node packaging this stream did not answer: retry"]);
  }
  res.status(up.status);
  for (const h of PASSED_HEADERS) {
    const v = up.headers.get(h);
    if (v !== null) res.set(h, v);
  }
  res.send(Buffer.from(await up.arrayBuffer()));
}

/** As for HLS (`?jwt=`, `Livepeer-Jwt`, `?accessKey=`, `Livepeer-Access-Key`), and a WHEP client's `Authorization: Bearer <jwt>`. */
const credentials = (req: Request): Credentials => ({
  jwt: req.query.jwt,
  jwtHeader: req.get("livepeer-jwt") ?? /^Bearer\s+(\S+)\s*$/i.exec(req.get("authorization") ?? "")?.[1],
  accessKey: req.query.accessKey || req.get("livepeer-access-key"),
});

export function whepRouter(deps: WhepRoutesDeps): express.Router {
  const router = express.Router();
  /** The node packaging a stream live elsewhere, unless this request was passed here by one. */
  const elsewhere = (req: Request, playbackId: string) =>
    !deps.remote || markedProxied(req, deps.remote.mark) ? Promise.resolve(undefined) : deps.remote.find(playbackId);
  router.use("/whep", cors("POST, GET, DELETE, PATCH, OPTIONS"));

  router.options("/whep/:playbackId", async (req, res) => {
    // A player needs its ICE servers before it makes its offer (no trickle): for a stream live
    // now, with the TURN credentials an offer's 201 would carry anyway; for anything else (a
    // CORS preflight, a made-up id), without them.
    const playbackId = String(req.params.playbackId);
    const live = PLAYBACK_ID.test(playbackId) && !!deps.whep && (deps.whep.playable(playbackId) || (await elsewhere(req, playbackId)) !== undefined);
    for (const link of live ? deps.iceLinks : deps.publicIceLinks) res.append("link", link);
    res.set({ allow: "POST, OPTIONS", "accept-post": "application/sdp" }).status(204).end();
  });

  // Livepeer's player asks HEAD first, to learn where a redirect would take it (none here).
  router.head("/whep/:playbackId", (_req, res) => void res.set({ allow: "POST, OPTIONS", "accept-post": "application/sdp" }).status(204).end());

  router.post("/whep/:playbackId", readOffer, async (req: Request, res: Response) => {
    const playbackId = String(req.params.playbackId);
    const whep = deps.whep;
    if (!whep) throw new SdpHttpError(404, ["WebRTC playback is off on this server (WEBRTC_PLAYBACK=false): play the stream's HLS"]);
    const subject = PLAYBACK_ID.test(playbackId) ? await deps.subject(playbackId) : undefined;
    if (!subject) throw new SdpHttpError(404, ["unknown playback id"]);
    if (!whep.playable(playbackId)) {
      const base = await elsewhere(req, playbackId);
      if (base) return passOn(req, res, base, deps.remote!.mark);
      // Not live: nothing to play, and nobody to ask (a webhook policy's question costs its owner a POST).
      throw new SdpHttpError(404, ["the stream is not live"]);
    }
    // Passed on by another node: the player's address is the one that node says.
    const client = markedProxied(req, deps.remote?.mark) ? req.get(PROXIED_CLIENT) : clientKey(req.ip ?? "");
    try {
      // Before the gate: a flood of offers must not become a flood of webhook policy questions.
      whep.checkPending(client);
      const verdict = await deps.gate.open(subject, credentials(req));
      if (!verdict.ok) throw new SdpHttpError(verdict.status, [verdict.error], verdict.retryAfterSeconds !== undefined ? { "retry-after": String(verdict.retryAfterSeconds) } : {});
      const offer = () => offerOf(req, "a WHEP offer", (status, message) => new WhepRefusal(status, message));
      const { id, answer } = await whep.play(playbackId, offer, client);
      res.once("finish", () => whep.answered(id));
      sendAnswer(res, `/whep/${playbackId}/${id}`, id, answer, deps.iceLinks);
    } catch (err) {
      if (err instanceof WhepRefusal) throw new SdpHttpError(err.status, [err.message], err.retryAfterSeconds !== undefined ? { "retry-after": String(err.retryAfterSeconds) } : {});
      throw err;
    }
  });

  /** A viewer here, passed on to the node that has it, or 404. */
  const viewer = async (req: Request, res: Response, then: (playbackId: string, id: string) => void) => {
    const playbackId = String(req.params.playbackId);
    const id = String(req.params.id);
    if (deps.whep?.status(playbackId, id)) return then(playbackId, id);
    const base = PLAYBACK_ID.test(playbackId) ? await elsewhere(req, playbackId) : undefined;
    if (base) return passOn(req, res, base, deps.remote!.mark);
    throw new SdpHttpError(404, ["no such WHEP viewer: it ended, or never existed"]);
  };
  router.options("/whep/:playbackId/:id", (_req, res) => void res.set({ allow: RESOURCE_ALLOW }).status(204).end());
  router.get("/whep/:playbackId/:id", (req, res) => viewer(req, res, (p, id) => void res.set("cache-control", "no-store").json(deps.whep!.status(p, id))));
  router.delete("/whep/:playbackId/:id", (req, res) =>
    viewer(req, res, (p, id) => {
      deps.whep!.end(p, id);
      res.status(200).end();
    }),
  );
  router.patch("/whep/:playbackId/:id", () => {
    throw new SdpHttpError(405, ["trickle ICE and ICE restarts are not supported: play again with a new offer (POST)"], { allow: RESOURCE_ALLOW });
  });
  router.all("/whep/:playbackId", (req) => {
    throw new SdpHttpError(405, [`method ${req.method} is not allowed here; allowed: POST, OPTIONS`], { allow: "POST, OPTIONS" });
  });
  router.all("/whep/:playbackId/:id", (req) => {
    throw new SdpHttpError(405, [`method ${req.method} is not allowed here; allowed: ${RESOURCE_ALLOW}`], { allow: RESOURCE_ALLOW });
  });
  router.use(sdpErrors);
  return router;
}
