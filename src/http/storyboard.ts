import express, { type Request, type Response } from "express";
import { STORYBOARD_SPRITE, STORYBOARD_VTT } from "../media";
import { credentials, refused, type HlsAccess } from "./hls";

// A DVR stream's seek preview (src/media/storyboard.ts): `/hls/<playbackId>/storyboard.vtt` and
// the sprite its cues point into, `/hls/<playbackId>/storyboard.jpg`. Gated as the live media
// are; both change as the window moves, so neither is cached unchecked.

const PLAYBACK_ID = /^[0-9a-z]{16}$/;
const notFound = (res: Response) => void res.status(404).json({ errors: ["not found"] });

/** What the routes ask of the storyboards (LiveStoryboard, src/assets). */
export interface Storyboards {
  vtt(playbackId: string, sprite?: string): string | undefined;
  sprite(playbackId: string): Promise<string | undefined>;
}

/** The storyboard's two routes; a stream without DVR on this node, or without a tile yet, is a 404. */
export function storyboardRouter(storyboards: Storyboards, access: HlsAccess): express.Router {
  const router = express.Router();
  /** The viewer the gate admits, or the answer already sent. */
  const admitted = async (req: Request, res: Response): Promise<boolean> => {
    const playbackId = String(req.params.playbackId);
    if (!PLAYBACK_ID.test(playbackId)) return (notFound(res), false);
    const subject = await access.subject(playbackId);
    if (!subject) return (notFound(res), false);
    const verdict = await access.gate.media(subject, credentials(req));
    if (!verdict.ok) return (refused(res, verdict), false);
    res.set({ "access-control-allow-origin": "*", "cache-control": "no-cache" });
    return true;
  };
  router.get(`/hls/:playbackId/${STORYBOARD_VTT}`, async (req, res) => {
    if (!(await admitted(req, res))) return;
    // The sprite's URL carries the query the VTT was asked with: a gated stream's viewer's credential.
    const query = req.originalUrl.includes("?") ? req.originalUrl.slice(req.originalUrl.indexOf("?")) : "";
    const text = storyboards.vtt(req.params.playbackId, STORYBOARD_SPRITE + query);
    if (text === undefined) return notFound(res);
    res.set("content-type", "text/vtt; charset=utf-8").send(Buffer.from(text));
  });
  router.get(`/hls/:playbackId/${STORYBOARD_SPRITE}`, async (req, res) => {
    if (!(await admitted(req, res))) return;
    const file = await storyboards.sprite(req.params.playbackId);
    if (file === undefined) return notFound(res);
    res.sendFile(file, { headers: { "content-type": "image/jpeg" }, cacheControl: false, lastModified: true, etag: true }, (err) => {
      if (err && !res.headersSent) notFound(res);
    });
  });
  return router;
}
